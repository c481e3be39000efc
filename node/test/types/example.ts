// A TypeScript program that uses every public type of agentstream; `tsc --noEmit` (strict) must
// accept it. It is also a compact example of the API (compiled by test/types.test.mjs).
import {
  AGENTS,
  AgentStreamError,
  DecodeLimitError,
  CHANNELS,
  Decoder,
  ERROR_CODES,
  Evolve,
  InvalidArgumentError,
  VERSION,
  didWork,
  hookFromCanonical,
  isAgentStreamError,
  lifecycleFromCanonical,
  parse,
  replay,
} from 'agentstream';
import type {
  AgentConfig,
  AgentError,
  AgentMessageChunk,
  AgentName,
  AgentState,
  AgentThoughtChunk,
  AgentUsage,
  AnyAgentStreamError,
  BrowserInfo,
  CancelReason,
  Channel,
  ChannelHandler,
  ChannelPayloads,
  ContentBlock,
  DecodeStats,
  DecoderInput,
  DecoderOptions,
  Diagnostic,
  DiffContent,
  Envelope,
  ErrorCode,
  ErrorKind,
  EvolveOptions,
  HookEvent,
  HookEventBase,
  HookEventType,
  HookPause,
  HookStatus,
  ImageContent,
  JsonObject,
  JsonValue,
  LifecycleEvent,
  LifecycleReason,
  ModelCompletedEvent,
  OutputEvent,
  Plan,
  PlanEntry,
  PlanEntryPriority,
  PlanEntryStatus,
  Replay,
  ReplayOptions,
  ResponseOutputTextDeltaEvent,
  ResponseReasoningDeltaEvent,
  RunCancelledEvent,
  RunCompletedEvent,
  RunFailedEvent,
  RunOutcome,
  RunStartedEvent,
  RunStoppedEvent,
  RunWaitingForHumanEvent,
  SandboxState,
  SessionUpdate,
  SessionUpdateKind,
  StepStartedEvent,
  TextContent,
  TokenUsage,
  ToolCall,
  ToolCallContent,
  ToolCallLocation,
  ToolCallStatus,
  ToolCallUpdate,
  ToolCompletedEvent,
  ToolFailedEvent,
  ToolIndeterminateEvent,
  ToolKind,
  ToolPreliminaryResultEvent,
  ToolStartedEvent,
  UsageScope,
  UsageTotals,
  UserMessageChunk,
  WrappedContent,
} from 'agentstream';

function assertNever(x: never): never {
  throw new Error(`unhandled ${JSON.stringify(x)}`);
}

// --- content --------------------------------------------------------------------------------

function describeBlock(block: ContentBlock): string {
  switch (block.type) {
    case 'text': {
      const t: TextContent = block;
      return t.text;
    }
    case 'image': {
      const img: ImageContent = block;
      return `[image ${img.mimeType}${img.uri !== undefined ? ` at ${img.uri}` : ''}, ${img.data.length} b64 chars]`;
    }
    default:
      return assertNever(block);
  }
}

function describeToolContent(c: ToolCallContent): string {
  switch (c.type) {
    case 'content': {
      const w: WrappedContent = c;
      return describeBlock(w.content);
    }
    case 'diff': {
      const d: DiffContent = c;
      return `${d.path}: ${d.oldText === null ? '(new file)' : d.oldText.length} -> ${d.newText.length}`;
    }
    default:
      return assertNever(c);
  }
}

function where(locations: ToolCallLocation[] | undefined): string {
  return (locations ?? []).map((l) => (l.line !== undefined ? `${l.path}:${l.line}` : l.path)).join(', ');
}

const kindIcons: Record<ToolKind, string> = {
  read: 'R', edit: 'E', delete: 'D', move: 'M', search: 'S', execute: 'X', think: 'T', fetch: 'F', switch_mode: 'P', other: '?',
};
const statusText: Record<ToolCallStatus, string> = { pending: '…', in_progress: '▶', completed: '✓', failed: '✗' };
const entryStatus: Record<PlanEntryStatus, number> = { pending: 0, in_progress: 1, completed: 2 };
const priorities: Record<PlanEntryPriority, number> = { high: 3, medium: 2, low: 1 };
const scopes: Record<UsageScope, string> = { call: 'one call', run: 'whole run' };

function handle(event: OutputEvent): string {
  const update: SessionUpdate = event.update;
  const kind: SessionUpdateKind = update.sessionUpdate;
  const prefix = [event.sessionId, event.messageId, event.parentToolCallId, event.model, event.timestamp].filter((x) => x !== undefined).join(' ');
  const extra: JsonObject | undefined = event.extra;
  switch (update.sessionUpdate) {
    case 'agent_message_chunk': {
      const m: AgentMessageChunk = update;
      return `${prefix} ${kind} ${describeBlock(m.content)}`;
    }
    case 'agent_thought_chunk': {
      const t: AgentThoughtChunk = update;
      return describeBlock(t.content);
    }
    case 'user_message_chunk': {
      const u: UserMessageChunk = update;
      return describeBlock(u.content);
    }
    case 'tool_call': {
      const call: ToolCall = update;
      const input: JsonValue | undefined = call.rawInput;
      return `${kindIcons[call.kind]} ${call.toolName ?? call.title} ${statusText[call.status]} ${where(call.locations)} ${JSON.stringify(input)} ${(call.content ?? []).map(describeToolContent).join()}`;
    }
    case 'tool_call_update': {
      const u: ToolCallUpdate = update;
      return `${u.toolCallId} ${u.status !== undefined ? statusText[u.status] : ''} ${u.title ?? ''} ${(u.content ?? []).map(describeToolContent).join()} ${where(u.locations)} ${JSON.stringify(u.rawOutput)}`;
    }
    case 'plan': {
      const p: Plan = update;
      const entries: PlanEntry[] = [...p.entries].sort((a, b) => priorities[b.priority] - priorities[a.priority] || entryStatus[a.status] - entryStatus[b.status]);
      return entries.map((e) => e.content).join('; ');
    }
    case 'error': {
      const e: AgentError = update;
      return `${e.fatal ? 'fatal' : 'retrying'}: ${e.message}`;
    }
    case 'usage': {
      const u: AgentUsage = update;
      const usage: TokenUsage = u.usage;
      return `${scopes[u.scope]} ${usage.promptTokens ?? '-'} in (${usage.cachedTokens ?? 0} cached), ${usage.completionTokens ?? '-'} out, $${usage.costUsd ?? '?'} ${JSON.stringify(usage.extra ?? extra)}`;
    }
    default:
      return assertNever(update);
  }
}

// --- lifecycle, channels, envelope --------------------------------------------------------------

const reasons: LifecycleReason[] = ['run_start', 'run_complete', 'browser_ready'];
const sandboxStates: SandboxState[] = ['booting', 'error', 'ready', 'running', 'paused', 'stopped'];
const agentStates: AgentState[] = ['idle', 'running', 'interrupted', 'error'];

function onLifecycle(event: LifecycleEvent): void {
  const browser: BrowserInfo | undefined = event.browser;
  if (event.reason === 'browser_ready' && browser?.liveUrl !== undefined) console.log(browser.liveUrl, browser.sessionId);
  console.log(event.sandboxId ?? '(local)', event.sandbox, event.agent, event.timestamp, reasons.includes(event.reason));
}

function deliver(env: Envelope): string {
  switch (env.channel) {
    case 'content':
      return `${env.runId}#${env.sequence} ${handle(env.event)}`;
    case 'lifecycle':
      return `${env.runId}#${env.sequence} ${env.event.reason}`;
    case 'stdout':
    case 'stderr':
      return `${env.runId}#${env.sequence}${env.coalesced !== undefined ? ` (+${env.coalesced})` : ''} ${env.event.trimEnd()}`;
    default:
      return assertNever(env);
  }
}

// --- hooks --------------------------------------------------------------------------------------

const hookStatuses: HookStatus[] = ['running', 'completed', 'failed', 'cancelled', 'stopped'];

function onEvent(event: HookEvent): string {
  const base: HookEventBase<HookEventType, HookStatus> = event;
  const head = `${base.type} ${base.runId} ${base.agentId} ${base.timestamp} ${base.status} #${base.sequence}`;
  switch (event.type) {
    case 'run.started': {
      const e: RunStartedEvent = event;
      return `${head} ${e.operation}`;
    }
    case 'step.started': {
      const e: StepStartedEvent = event;
      return `${head} step ${e.stepIndex} ${e.messageId ?? ''} ${e.model ?? ''}`;
    }
    case 'model.completed': {
      const e: ModelCompletedEvent = event;
      return `${head} step ${e.stepIndex} ${e.usage?.completionTokens ?? 0}`;
    }
    case 'tool.started': {
      const e: ToolStartedEvent = event;
      return `${head} ${e.toolCallId} ${e.toolName ?? e.kind} ${e.title} ${JSON.stringify(e.arguments)}`;
    }
    case 'tool.preliminary_result': {
      const e: ToolPreliminaryResultEvent = event;
      return `${head} ${e.result}`;
    }
    case 'tool.completed': {
      const e: ToolCompletedEvent = event;
      return `${head} ${e.output} ${JSON.stringify(e.rawOutput)}`;
    }
    case 'tool.failed': {
      const e: ToolFailedEvent = event;
      return `${head} ${e.error} ${e.retryable === true ? 'retry' : ''}`;
    }
    case 'tool.indeterminate': {
      const e: ToolIndeterminateEvent = event;
      return `${head} ${e.detail}`;
    }
    case 'run.waiting_for_human': {
      const e: RunWaitingForHumanEvent = event;
      const pause: HookPause = e.pause;
      return `${head} ${pause.kind} ${pause.toolCallId} ${pause.toolName ?? ''} ${pause.reason}`;
    }
    case 'response.output_text.delta': {
      const e: ResponseOutputTextDeltaEvent = event;
      return e.delta;
    }
    case 'response.reasoning.delta': {
      const e: ResponseReasoningDeltaEvent = event;
      return e.delta;
    }
    case 'run.completed': {
      const e: RunCompletedEvent = event;
      const done: 'completed' = e.status;
      const totals: UsageTotals | undefined = e.usage;
      return `${head} ${done} ${e.output} ${totals?.costUsd ?? 0}`;
    }
    case 'run.failed': {
      const e: RunFailedEvent = event;
      return `${head} ${e.error}`;
    }
    case 'run.cancelled': {
      const e: RunCancelledEvent = event;
      return `${head} ${e.reason} after #${e.lastSequence}`;
    }
    case 'run.stopped': {
      const e: RunStoppedEvent = event;
      return `${head} ${e.stopReason}`;
    }
    default:
      return assertNever(event);
  }
}

// --- the API ------------------------------------------------------------------------------------

const options: DecoderOptions = { maxLineBytes: 1 << 20 };
const decoder = new Decoder('gemini', options);
const chunk: DecoderInput = Buffer.from('{"type":"init","session_id":"s"}\n');
const events: OutputEvent[] = [...decoder.feed(chunk), ...decoder.feed(new Uint8Array(0)), ...decoder.feed(''), ...decoder.finish()];
const forwarded: string = new Decoder('codex').feedJson(chunk) + new Decoder('codex').finishJson();
const stats: DecodeStats = decoder.stats;
const diagnostics: Diagnostic[] = decoder.takeDiagnostics();
const session: string | undefined = decoder.sessionId;
const agent: AgentName = decoder.agent;
console.log(events.map(handle), stats.lines + stats.invalidJson, diagnostics.length, session, agent, decoder.hasPartialLine, didWork(events));
console.log(forwarded, parse('claude', '').length, VERSION, AGENTS.length, CHANNELS.length);

const config: AgentConfig = { type: 'claude', model: 'sonnet', extraArgs: ['--verbose'], env: { A: 'b' } };
const evolveOptions: EvolveOptions = { config };
const evolve = new Evolve(evolveOptions);
const onContent: ChannelHandler<'content'> = (event) => console.log(handle(event));
const onStdout: ChannelHandler<'stdout'> = (text: ChannelPayloads['stdout']) => process.stdout.write(text);
evolve
  .on('content', onContent)
  .on('lifecycle', onLifecycle)
  .on('stdout', onStdout)
  .on('stderr', (text) => process.stderr.write(`[ERR] ${text}`));
const channel: Channel = 'content';
console.log(evolve.listenerCount(channel), evolve.config.type);

try {
  evolve.on('content', onContent);
} catch (e) {
  if (isAgentStreamError(e)) {
    const any: AnyAgentStreamError = e;
    const code: ErrorCode = any.code;
    const kind: ErrorKind = any.kind;
    console.log(code, kind, ERROR_CODES.includes(code));
  }
  if (e instanceof InvalidArgumentError) console.log(e.code === 'INVALID_ARGUMENT');
  if (e instanceof AgentStreamError && e.code === 'TIMEOUT') console.log('timeout');
}

const hook: HookEvent = hookFromCanonical('{}');
const lifecycle: LifecycleEvent = lifecycleFromCanonical({});
console.log(onEvent(hook), hookStatuses, sandboxStates, agentStates, deliver({ runId: 'r', sequence: 0, channel: 'lifecycle', event: lifecycle }));

function describeOutcome(o: RunOutcome): string {
  switch (o.state) {
    case 'completed':
      return 'ok';
    case 'failed':
      return `${o.error}: ${o.detail}`;
    case 'cancelled': {
      const r: CancelReason = o.reason;
      return r.kind === 'caller' ? `cancelled: ${r.detail}` : `cancelled (${r.kind})`;
    }
    default:
      return assertNever(o);
  }
}
const replayOptions: ReplayOptions = { runId: 'r1', agentId: 'a', timestamp: '2026-12-02T00:00:00.000Z' };
const replayed: Replay = replay('codex', chunk, replayOptions);
console.log(replayed.items.map(deliver), replayed.hooks.map(onEvent), describeOutcome(replayed.outcome), replayed.stats.events);
try {
  new Decoder('claude', { maxLineBytes: 10, onOversize: 'raise' }).feed(chunk);
} catch (e) {
  if (e instanceof DecodeLimitError) console.log(e.line, e.events.length, e.code, e.numericCode);
}

// Negative checks: these must NOT compile.
// @ts-expect-error not a channel name
evolve.on('message', () => {});
// @ts-expect-error a content handler receives an OutputEvent, not a string
evolve.on('content', (text: string) => text.length);
// @ts-expect-error not an agent name
const badConfig: AgentConfig = { type: 'cursor' };
// @ts-expect-error optional fields are absent, never null
const badEvent: OutputEvent = { update: { sessionUpdate: 'plan', entries: [] }, sessionId: null };
console.log(badConfig, badEvent);
