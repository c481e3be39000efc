// A TypeScript program that uses every public type of agentstream; `tsc --noEmit` (strict) must
// accept it. It is also a compact example of the API (compiled by test/types.test.mjs).
import {
  AGENTS,
  AgentStreamError,
  BackgroundRun,
  DecodeLimitError,
  CHANNELS,
  Decoder,
  ERROR_CODES,
  Evolve,
  InvalidArgumentError,
  VERSION,
  didWork,
  HandlerWarning,
  RunStream,
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
  Limits,
  BrowserInfo,
  CancelKind,
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
  EvolveStatus,
  ExecuteCommandOptions,
  HookEvent,
  HookEventBase,
  HookEventType,
  HookHandler,
  HookPause,
  HookStatus,
  ImageContent,
  JsonObject,
  JsonValue,
  LifecycleEvent,
  LifecycleReason,
  ModelCompletedEvent,
  OperationOptions,
  OutputEvent,
  Plan,
  PlanEntry,
  PlanEntryPriority,
  PlanEntryStatus,
  Pressure,
  Replay,
  ReplayOptions,
  ResponseOutputTextDeltaEvent,
  ResponseReasoningDeltaEvent,
  RunCancelledEvent,
  RunCompletedEvent,
  RunFailedEvent,
  RunOptions,
  BackgroundRunOptions,
  RunOutcome,
  RunResult,
  RunStartedEvent,
  RunResumedEvent,
  RunState,
  RunStoppedEvent,
  RunWaitingForHumanEvent,
  SandboxState,
  StreamOptions,
  SessionUpdate,
  SessionUpdateKind,
  StepStartedEvent,
  StepCompletedEvent,
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
    case 'run.resumed': {
      const e: RunResumedEvent = event;
      return `${head} ${e.operation} after a ${e.previousStatus} run`;
    }
    case 'step.started': {
      const e: StepStartedEvent = event;
      return `${head} step ${e.stepIndex} ${e.messageId ?? ''} ${e.model ?? ''}`;
    }
    case 'model.completed': {
      const e: ModelCompletedEvent = event;
      return `${head} step ${e.stepIndex} ${e.usage?.completionTokens ?? 0}`;
    }
    case 'step.completed': {
      const e: StepCompletedEvent = event;
      return `${head} step ${e.stepIndex} ${e.messageId ?? ''} ${e.model ?? ''}`;
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

// --- running -----------------------------------------------------------------------------------

const cancelKinds: Record<CancelKind, string> = { caller: 'stopped', reader_left: 'left', stalled: 'stalled', timeout: 'timed out' };
const states: Record<RunState, number> = { completed: 0, failed: 1, cancelled: 2 };

function report(r: RunResult): string {
  const p: Pressure = r.pressure;
  const cancel = r.cancelKind !== undefined ? cancelKinds[r.cancelKind] : '';
  return [
    r.runId, states[r.state], r.exitCode ?? '', r.signal ?? '', r.sessionId ?? '', r.usage.promptTokens ?? 0, r.finalText ?? '',
    r.error ?? '', r.cancelReason ?? '', cancel, p.buffered, p.bytes, p.peak, p.peakBytes, p.coalesced, p.oversize, p.stalled,
    p.droppedAfterTerminal, p.refusedTerminals, r.stats.lines, r.lastSequence, (r.diagnostics ?? []).join(), r.durationMs,
  ].join(' ');
}

async function running(): Promise<void> {
  const onHook: HookHandler = async (event) => {
    await new Promise((r) => setTimeout(r, 1));
    console.log(onEvent(event));
  };
  const limits: Limits = { highWater: 64, byteBudget: 1 << 20, stallMs: 10_000, maxLineBytes: 1 << 24 };
  const aborter = new AbortController();
  const common: OperationOptions = { onEvent: onHook, timeoutMs: 60_000, limits, killGraceMs: 2000, signal: aborter.signal };
  const runOptions: RunOptions = { ...common, prompt: 'Fix the failing test', redact: true, idempotentTools: ['Read'], model: 'm', background: false };
  const result: RunResult = await evolve.run(runOptions);
  console.log(report(result), result.handlerErrors);
  const again: RunResult = await evolve.run({ prompt: 'And the other one', resume: result.sessionId ?? 'abc', cwd: '/tmp', env: { A: 'b' } });
  console.log(report(again));
  const backgroundOptions: BackgroundRunOptions = { prompt: 'In the background', background: true };
  const background: BackgroundRun = await evolve.run(backgroundOptions);
  const later: RunResult = await background.result;
  console.log(background.runId, background.done, background.pressure.buffered, report(later));
  background.cancel('not needed');
  const backgroundCommand: BackgroundRun = await evolve.executeCommand({ command: 'sleep 1', background: true });
  console.log(report(await backgroundCommand.result));
  const status: EvolveStatus = evolve.status();
  const session: string | undefined = evolve.getSession();
  const sandbox: SandboxState = status.sandbox;
  console.log(status.hasRun, status.activeRunId, status.lastStatus, status.agentState, sandbox, session);
  evolve.setSession(null);
  evolve.setSession('abc');

  const command: ExecuteCommandOptions = { command: ['ls', '-la'], cwd: '/tmp', env: { LC_ALL: 'C' }, timeoutMs: 5000 };
  console.log(report(await evolve.executeCommand(command)), report(await evolve.executeCommand({ command: 'echo hi' })));

  const streamOptions: StreamOptions = { prompt: 'Hello', onEvent: (e) => void console.log(e.type), signal: aborter.signal };
  const stream: RunStream = evolve.stream(streamOptions);
  const id: string = stream.runId;
  const live: Pressure = stream.pressure;
  for await (const envelope of stream) {
    const e: Envelope = envelope;
    console.log(deliver(e), id, live.buffered);
    if (e.channel === 'content' && e.event.update.sessionUpdate === 'error') break;
    if (e.sequence > 1000) stream.cancel('too long');
  }
  const final: RunResult = await stream.result;
  console.log(report(final));

  await evolve.pause();
  await evolve.resume();
  const interrupted: boolean = evolve.interrupt('the user pressed stop');
  const killed: boolean = evolve.kill();
  console.log(interrupted, killed);
  await evolve.close();
  const active: string | undefined = evolve.activeRunId;
  console.log(active);

  // Async channel handlers are awaited in order too.
  evolve.on('content', async (event) => {
    await new Promise((r) => setTimeout(r, 1));
    console.log(handle(event));
  });
  evolve.off('content', onContent);
}

process.on('warning', (w) => {
  if (w instanceof HandlerWarning) {
    const ch: 'content' | 'lifecycle' | 'stdout' | 'stderr' | 'onEvent' = w.channel;
    const stack: string | undefined = w.detail;
    console.log(ch, w.runId, w.sequence, w.event, w.cause, w.code, stack);
  }
});

/** `await using` ends the scope by killing a run still going on and waiting for it. */
async function scoped(): Promise<void> {
  await using scopedEvolve = new Evolve({ config: { type: 'claude' } });
  scopedEvolve.on('stdout', (line) => void console.log(line.length));
  const r: RunResult = await scopedEvolve.run({ prompt: 'x' });
  console.log(report(r));
}
void scoped();
void running();

// Negative checks: these must NOT compile.
// @ts-expect-error not a channel name
evolve.on('message', () => {});
// @ts-expect-error a content handler receives an OutputEvent, not a string
evolve.on('content', (text: string) => text.length);
// @ts-expect-error not an agent name
const badConfig: AgentConfig = { type: 'cursor' };
// @ts-expect-error optional fields are absent, never null
const badEvent: OutputEvent = { update: { sessionUpdate: 'plan', entries: [] }, sessionId: null };
// @ts-expect-error run() needs a prompt
void evolve.run({ timeoutMs: 5 });
// @ts-expect-error time is timeoutMs (milliseconds), there is no `timeout`
void evolve.run({ prompt: 'x', timeout: 5 });
// @ts-expect-error a stream is not a background run
void evolve.stream({ prompt: 'x', background: true });
// @ts-expect-error a command is a string or an array of strings
void evolve.executeCommand({ command: 42 });
// @ts-expect-error a result's state is one of three
const badState: RunState = 'running';
// @ts-expect-error onEvent receives hook events, not strings
void evolve.run({ prompt: 'x', onEvent: (e: string) => e });
console.log(badConfig, badEvent, badState);
