/**
 * The public types of agentstream: one TypeScript declaration per shape of the seed's
 * `TypedDict`s (OutputEvent and its eight SessionUpdate variants, ContentBlock, ToolCall, …),
 * plus LifecycleEvent, the `onEvent` hook events and the run envelope, all with camelCase keys.
 *
 * Optional properties (`?`) are ABSENT when unknown, never `null`, never guessed. The only
 * `null`s are the seed's own `str | None` fields: {@link DiffContent.oldText} (a new file) and
 * {@link LifecycleEvent.sandboxId} (a local run).
 *
 * These are checked against the core's JSON Schema (`core/schema/events.schema.json`) and against
 * every golden event by the test suite, so they cannot drift from what the core emits.
 *
 * @module
 */

/** Any JSON value. */
export type JsonValue = string | number | boolean | null | JsonValue[] | { [key: string]: JsonValue };

/** A JSON object with the harness's own key names, kept verbatim. */
export type JsonObject = { [key: string]: JsonValue };

// =============================================================================
// Content types
// =============================================================================

/** Plain text. */
export interface TextContent {
  type: 'text';
  text: string;
}

/** An image: base64 `data`, or referenced by `uri` (then `data` and `mimeType` may be empty). */
export interface ImageContent {
  type: 'image';
  /** Base64-encoded bytes. */
  data: string;
  /** `image/png`, `image/jpeg`, … */
  mimeType: string;
  uri?: string;
}

/** A piece of message content: text or an image. */
export type ContentBlock = TextContent | ImageContent;

/** A file change shown as a diff. */
export interface DiffContent {
  type: 'diff';
  path: string;
  /** `null` for a new file. */
  oldText: string | null;
  newText: string;
}

/** A content block attached to a tool call (the harness's result text, or an image). */
export interface WrappedContent {
  type: 'content';
  content: ContentBlock;
}

/** Content attached to a tool call. */
export type ToolCallContent = WrappedContent | DiffContent;

// =============================================================================
// Tool types
// =============================================================================

/** The category of a tool, for icons and grouping. */
export type ToolKind =
  | 'read' // Read, NotebookRead
  | 'edit' // Edit, Write, NotebookEdit
  | 'delete'
  | 'move'
  | 'search' // Glob, Grep, LS
  | 'execute' // Bash, BashOutput, KillShell
  | 'think' // Task (subagent)
  | 'fetch' // WebFetch, WebSearch
  | 'switch_mode' // ExitPlanMode
  | 'other'; // MCP tools, unknown

/** Status of a tool call. */
export type ToolCallStatus = 'pending' | 'in_progress' | 'completed' | 'failed';

/** A file a tool touches. */
export interface ToolCallLocation {
  path: string;
  line?: number;
}

// =============================================================================
// Session update types
// =============================================================================

/** Text or an image from the agent, in pieces. */
export interface AgentMessageChunk {
  sessionUpdate: 'agent_message_chunk';
  content: ContentBlock;
}

/** Reasoning (codex) or thinking (claude) text, in pieces. */
export interface AgentThoughtChunk {
  sessionUpdate: 'agent_thought_chunk';
  content: ContentBlock;
}

/** The user's message echoed by the harness (gemini). */
export interface UserMessageChunk {
  sessionUpdate: 'user_message_chunk';
  content: ContentBlock;
}

/** A tool call started (or was announced). */
export interface ToolCall {
  sessionUpdate: 'tool_call';
  /** The harness's id for the call; matches later `tool_call_update`s. */
  toolCallId: string;
  /** For people to read; not round-trippable (use `toolName`). */
  title: string;
  /** The harness-native tool name, verbatim, e.g. `Bash` or `mcp__server__tool`. */
  toolName?: string;
  kind: ToolKind;
  status: ToolCallStatus;
  /** The tool input as the harness printed it. */
  rawInput?: JsonValue;
  content?: ToolCallContent[];
  locations?: ToolCallLocation[];
}

/** A tool call progressing or finishing (may arrive before its `tool_call`). */
export interface ToolCallUpdate {
  sessionUpdate: 'tool_call_update';
  toolCallId: string;
  status?: ToolCallStatus;
  title?: string;
  /** The result exactly as the harness sent it (never fenced or prefixed). */
  content?: ToolCallContent[];
  locations?: ToolCallLocation[];
  /** The harness's own structured record of the result, verbatim. */
  rawOutput?: JsonValue;
}

/** Status of a plan entry. */
export type PlanEntryStatus = 'pending' | 'in_progress' | 'completed';

/** Priority of a plan entry. */
export type PlanEntryPriority = 'high' | 'medium' | 'low';

/** One todo of a plan. */
export interface PlanEntry {
  content: string;
  status: PlanEntryStatus;
  priority: PlanEntryPriority;
}

/** The agent's todo list; each plan replaces the whole list. */
export interface Plan {
  sessionUpdate: 'plan';
  entries: PlanEntry[];
}

/** A failure the HARNESS reported. Not agent work. */
export interface AgentError {
  sessionUpdate: 'error';
  /** The harness's own message, verbatim. */
  message: string;
  /** True when the harness treated it as terminal for the turn. */
  fatal: boolean;
}

/** Token counters (Harbor ATIF `Metrics` names). A counter the harness did not print is absent. */
export interface TokenUsage {
  /** Input INCLUDING the cached and cache-written shares. */
  promptTokens?: number;
  completionTokens?: number;
  /** The cache-read share of `promptTokens`. */
  cachedTokens?: number;
  /** Only when the harness priced it. */
  costUsd?: number;
  /** The harness's other counters, its own key names verbatim. */
  extra?: JsonObject;
}

/** A run's token totals (summed over its calls, or the harness's own run total). */
export interface UsageTotals {
  promptTokens?: number;
  completionTokens?: number;
  cachedTokens?: number;
  costUsd?: number;
}

/** Whether a usage update covers one LLM call or the harness's whole run. */
export type UsageScope = 'call' | 'run';

/** Token accounting the HARNESS reported. Not agent work. */
export interface AgentUsage {
  sessionUpdate: 'usage';
  scope: UsageScope;
  usage: TokenUsage;
}

/** What happened: the eight kinds of session update, discriminated by `sessionUpdate`. */
export type SessionUpdate =
  | AgentMessageChunk
  | AgentThoughtChunk
  | UserMessageChunk
  | ToolCall
  | ToolCallUpdate
  | Plan
  | AgentError
  | AgentUsage;

/** The `sessionUpdate` discriminator values. */
export type SessionUpdateKind = SessionUpdate['sessionUpdate'];

// =============================================================================
// Top-level event (the `content` channel)
// =============================================================================

/** One parsed event: a session update plus the facts of the wire line it came from. */
export interface OutputEvent {
  /** The harness's session/thread id, stamped on every event once seen. */
  sessionId?: string;
  update: SessionUpdate;
  /** The harness's own clock for this line, ISO 8601. */
  timestamp?: string;
  /** The model the harness named for this line. */
  model?: string;
  /** The harness's id for the LLM message this line belongs to. */
  messageId?: string;
  /** On a SUBAGENT's line: the parent's tool call that delegated to it. */
  parentToolCallId?: string;
  /** Other facts of the line, the harness's own key names (e.g. `stop_reason`). */
  extra?: JsonObject;
}

// =============================================================================
// Lifecycle (the `lifecycle` channel)
// =============================================================================

/** Sandbox (local environment) state. */
export type SandboxState = 'booting' | 'error' | 'ready' | 'running' | 'paused' | 'stopped';

/** Agent state. */
export type AgentState = 'idle' | 'running' | 'interrupted' | 'error';

/** Why a lifecycle event fired. */
export type LifecycleReason =
  | 'browser_ready'
  | 'sandbox_boot'
  | 'sandbox_ready'
  | 'sandbox_connected'
  | 'sandbox_pause'
  | 'sandbox_resume'
  | 'sandbox_killed'
  | 'sandbox_error'
  | 'run_start'
  | 'run_complete'
  | 'run_interrupted'
  | 'run_failed'
  | 'run_background_complete'
  | 'run_background_failed'
  | 'command_start'
  | 'command_complete'
  | 'command_interrupted'
  | 'command_failed'
  | 'command_background_complete'
  | 'command_background_failed';

/** Browser live-view facts of a `browser_ready` lifecycle event. */
export interface BrowserInfo {
  liveUrl?: string;
  sessionId?: string;
  sessionTag?: string;
  [key: string]: string | undefined;
}

/** A sandbox/agent state transition (the seed's LifecycleEvent, camelCase keys). */
export interface LifecycleEvent {
  /** `null` for a local run without a sandbox. */
  sandboxId: string | null;
  sandbox: SandboxState;
  agent: AgentState;
  /** ISO 8601 UTC. */
  timestamp: string;
  browser?: BrowserInfo;
  reason: LifecycleReason;
}

// =============================================================================
// Channels and the run envelope
// =============================================================================

/** The four names `on(...)` accepts. */
export type Channel = 'content' | 'lifecycle' | 'stdout' | 'stderr';

/** What each channel's handler receives. */
export interface ChannelPayloads {
  /** Parsed ACP-style events. */
  content: OutputEvent;
  /** Sandbox and agent state transitions. */
  lifecycle: LifecycleEvent;
  /** Raw harness stdout (one line as printed). */
  stdout: string;
  /** Raw harness stderr. */
  stderr: string;
}

/**
 * A handler for channel `C`. Called in sequence order, one at a time; if it returns a promise
 * (an `async` handler), that is awaited before the next event is delivered; any other return
 * value is ignored. A handler that throws (or rejects) is reported through
 * `process.emitWarning` (a `HandlerWarning`) and the run goes on.
 */
export type ChannelHandler<C extends Channel> = (payload: ChannelPayloads[C]) => unknown;

/**
 * An `onEvent` hook handler: receives each hook event in order; a returned promise is awaited
 * before the run's next event is delivered (the seed's TypeScript rule).
 */
export type HookHandler = (event: HookEvent) => unknown;

/** One delivery of a run's ordered stream (iterator API): gapless `sequence` from 0 per run. */
export type Envelope = {
  [C in Channel]: {
    runId: string;
    sequence: number;
    channel: C;
    event: ChannelPayloads[C];
    /** Text deltas merged into this one under backpressure (absent when none). */
    coalesced?: number;
  };
}[Channel];

/** Why a run was cancelled: the first reason given stands. */
export type CancelReason =
  | { kind: 'caller'; detail: string }
  | { kind: 'reader_left' }
  | { kind: 'stalled' }
  | { kind: 'timeout' };

/** How a run ended. */
export type RunOutcome =
  | { state: 'completed' }
  | {
      state: 'failed';
      /** A short machine-readable cause: `exit_status`, `killed`, `harness_error`, `truncated_output`, … */
      error: string;
      /** A sentence for people. */
      detail: string;
    }
  | { state: 'cancelled'; reason: CancelReason };

// =============================================================================
// Hook events (`onEvent`)
// =============================================================================

/** The run's status when a hook fires: `running`, then one terminal status on the terminal hook. */
export type HookStatus = 'running' | 'completed' | 'failed' | 'cancelled' | 'stopped';

/** Fields every hook event carries. */
export interface HookEventBase<T extends string, S extends HookStatus = 'running'> {
  type: T;
  runId: string;
  agentId: string;
  /** When it fired, ISO 8601 UTC. */
  timestamp: string;
  status: S;
  /** The sequence of the stream item it was derived from. */
  sequence: number;
}

/** A run (or command) started. */
export interface RunStartedEvent extends HookEventBase<'run.started'> {
  operation: 'run' | 'command';
}

/** A new model turn started (a new LLM message). */
export interface StepStartedEvent extends HookEventBase<'step.started'> {
  stepIndex: number;
  messageId?: string;
  model?: string;
}

/** The model call of a step ended. */
export interface ModelCompletedEvent extends HookEventBase<'model.completed'> {
  stepIndex: number;
  messageId?: string;
  model?: string;
  /** The step's last per-call usage. */
  usage?: TokenUsage;
}

/** A tool call started. */
export interface ToolStartedEvent extends HookEventBase<'tool.started'> {
  stepIndex: number;
  toolCallId: string;
  toolName?: string;
  kind: ToolKind;
  title: string;
  /** The tool input, verbatim (the harness's key names). */
  arguments?: JsonValue;
}

/** A tool reported progress. */
export interface ToolPreliminaryResultEvent extends HookEventBase<'tool.preliminary_result'> {
  stepIndex: number;
  toolCallId: string;
  toolName?: string;
  result: string;
}

/** A tool returned. */
export interface ToolCompletedEvent extends HookEventBase<'tool.completed'> {
  stepIndex: number;
  toolCallId: string;
  toolName?: string;
  output: string;
  /** The harness's structured result record, verbatim. */
  rawOutput?: JsonValue;
}

/** A tool failed (or was stopped while running and is safe to retry: `retryable`). */
export interface ToolFailedEvent extends HookEventBase<'tool.failed'> {
  stepIndex: number;
  toolCallId: string;
  toolName?: string;
  error: string;
  retryable?: boolean;
}

/** A tool call was in flight when the run was cancelled or died: its effect cannot be known. */
export interface ToolIndeterminateEvent extends HookEventBase<'tool.indeterminate'> {
  stepIndex: number;
  toolCallId: string;
  toolName?: string;
  detail: string;
}

/** Why a run waits for a person. */
export interface HookPause {
  kind: 'permission';
  toolCallId: string;
  toolName?: string | null;
  reason: string;
}

/** The harness reported a permission prompt or denial. */
export interface RunWaitingForHumanEvent extends HookEventBase<'run.waiting_for_human'> {
  stepIndex: number;
  pause: HookPause;
}

/** A piece of the answer text. */
export interface ResponseOutputTextDeltaEvent extends HookEventBase<'response.output_text.delta'> {
  stepIndex: number;
  delta: string;
}

/** A piece of reasoning text. */
export interface ResponseReasoningDeltaEvent extends HookEventBase<'response.reasoning.delta'> {
  stepIndex: number;
  delta: string;
}

/** Terminal: the run completed. */
export interface RunCompletedEvent extends HookEventBase<'run.completed', 'completed'> {
  /** The final answer: the message text of the last step that had any. */
  output: string;
  /** The run's token totals, when the harness reported any. */
  usage?: UsageTotals;
}

/** Terminal: the run failed. */
export interface RunFailedEvent extends HookEventBase<'run.failed', 'failed'> {
  error: string;
}

/** Terminal: the run was cancelled. */
export interface RunCancelledEvent extends HookEventBase<'run.cancelled', 'cancelled'> {
  reason: string;
  /** The sequence of the last item before the terminal one (-1 when none). */
  lastSequence: number;
  usage?: UsageTotals;
}

/** Terminal: a stop condition (timeout) ended the run. */
export interface RunStoppedEvent extends HookEventBase<'run.stopped', 'stopped'> {
  stopReason: string;
  /** The run's token totals, when the harness reported any. */
  usage?: UsageTotals;
}

/** An `onEvent` hook event: flat, camelCase, discriminated by `type`. */
export type HookEvent =
  | RunStartedEvent
  | StepStartedEvent
  | ModelCompletedEvent
  | ToolStartedEvent
  | ToolPreliminaryResultEvent
  | ToolCompletedEvent
  | ToolFailedEvent
  | ToolIndeterminateEvent
  | RunWaitingForHumanEvent
  | ResponseOutputTextDeltaEvent
  | ResponseReasoningDeltaEvent
  | RunCompletedEvent
  | RunFailedEvent
  | RunCancelledEvent
  | RunStoppedEvent;

/** The hook `type` values. */
export type HookEventType = HookEvent['type'];

// =============================================================================
// Decoder
// =============================================================================

/** The harness CLIs agentstream understands. */
export type AgentName = 'claude' | 'codex' | 'gemini' | 'qwen' | 'kimi' | 'opencode' | 'droid';

/** Per-run decode statistics (camelCase keys of the core's `DecodeStats`). */
export interface DecodeStats {
  /** Bytes fed. */
  bytes: number;
  /** Lines framed (including blank and oversize lines). */
  lines: number;
  /** Events produced. */
  events: number;
  blankLines: number;
  invalidJson: number;
  nonObject: number;
  unknownType: number;
  unexpectedShape: number;
  /** Lines over the maximum length, skipped. */
  oversizeLines: number;
  /** Lines with invalid UTF-8 (replaced with U+FFFD). */
  invalidUtf8Lines: number;
}

/** A problem with the input worth telling a person about (decoding goes on). */
export interface Diagnostic {
  /** 1-based line number in the input. */
  line: number;
  message: string;
}

/** Options of a `Decoder`. */
export interface DecoderOptions {
  /** Lines longer than this many bytes are skipped and reported (default 16 MiB). */
  maxLineBytes?: number;
  /**
   * What an over-long line does: `skip` (default: counted in `stats.oversizeLines` and reported
   * by `takeDiagnostics()`), or `raise`: `feed`/`finish` throw a `DecodeLimitError` (code
   * `DECODE_LIMIT`) carrying the events of the other lines of that call; the decoder stays usable.
   */
  onOversize?: 'skip' | 'raise';
  /**
   * Mask secret shapes in tool-call inputs and every field derived from them (default `true`, as
   * in a run; answer text is never altered). `false` delivers them as the harness printed them.
   */
  redact?: boolean;
}

/** Options of `parse`. */
export interface ParseOptions {
  /** Mask secret shapes in tool-call inputs (default `true`; see {@link DecoderOptions.redact}). */
  redact?: boolean;
}

/** Options of `replay`. */
export interface ReplayOptions {
  /** The run id stamped on every item (default `replay`). */
  runId?: string;
  /** The agent id of hook events (default: the agent's name). */
  agentId?: string;
  /** The timestamp of lifecycle and hook events (default `1970-01-01T00:00:00.000Z`). */
  timestamp?: string;
  /** Mask secret shapes in tool-call inputs (default `true`, as in a run). */
  redact?: boolean;
}

/** Everything a replayed run delivers. */
export interface Replay {
  /** The ordered stream: `run_start`, each stdout line followed by its content events, the terminal lifecycle event last. */
  items: Envelope[];
  /** The hook events derived from it, in order; exactly one terminal hook, last. */
  hooks: HookEvent[];
  outcome: RunOutcome;
  stats: DecodeStats;
}

/** What `feed` and `parse` accept: text, or bytes. */
export type DecoderInput = string | Uint8Array | ArrayBuffer | ArrayBufferView;

// =============================================================================
// Evolve: running agents
// =============================================================================

/** How to start a harness. */
export interface AgentConfig {
  /** Which harness (`claude-code` is accepted for `claude`). */
  type: AgentName | 'claude-code';
  /** The agent id reported on hook events (default: the agent's name). */
  agentId?: string;
  /** Replaces the harness executable (default: its usual command on PATH). */
  bin?: string;
  /** The model to ask for, passed with the harness's own flag. */
  model?: string;
  /** Extra arguments, after the streaming flags and before the prompt. */
  extraArgs?: string[];
  /** Working directory of the harness. */
  cwd?: string;
  /** Environment variables added to (or overriding) the inherited environment. */
  env?: Record<string, string>;
}

/** Options of `Evolve`. */
export interface EvolveOptions {
  config: AgentConfig;
}

/**
 * The bounded buffer between a run and its reader (the core's defaults: 256 items, 8 MiB, 30 s).
 * Above either mark, arriving text deltas merge into the newest buffered one (`coalesced`);
 * nothing else is ever merged or dropped. Unread items waiting longer than `stallSeconds` get
 * the run cancelled (`cancelKind: 'stalled'`).
 */
export interface BackpressureOptions {
  /** Unread items before text deltas merge (0 = from the first delta). */
  highWater?: number;
  /** Unread bytes (JSON length of each event) before text deltas merge; > 0. */
  byteBudget?: number;
  /** Seconds unread items may wait before the run is cancelled as stalled; > 0. */
  stallSeconds?: number;
}

/** Options every operation takes. */
export interface OperationOptions {
  /** Hook events of the run (`run.started`, `tool.started`, …, one terminal), awaited in order. */
  onEvent?: HookHandler;
  /** Stop the run after this many MILLISECONDS (it ends `cancelled`, `cancelKind: 'timeout'`; hook `run.stopped`). */
  timeout?: number;
  /** The buffer between the run and its reader. */
  backpressure?: BackpressureOptions;
  /** A background operation (terminal reasons `run_background_*` / `command_background_*`). */
  background?: boolean;
  /** Milliseconds between SIGTERM and SIGKILL when the run is cancelled (default 5000). */
  killGrace?: number;
}

/** Options of `evolve.run(…)` and `evolve.stream(…)`. */
export interface RunOptions extends OperationOptions {
  /** The prompt. */
  prompt: string;
  /** Mask secret shapes in tool-call inputs (default `true`; answer text is never altered). */
  redact?: boolean;
  /** Tools whose in-flight calls are safe to retry when the run is cancelled (hook `tool.failed` with `retryable`). */
  idempotentTools?: string[];
}

/** Options of `evolve.executeCommand(…)`. */
export interface ExecuteCommandOptions extends OperationOptions {
  /** A shell command (run with `sh -c`), or the program and its arguments. */
  command: string | readonly string[];
  /** Working directory (default: the config's, else the current one). */
  cwd?: string;
  /** Extra environment, on top of the config's. */
  env?: Record<string, string>;
}

/** How an operation ended. */
export type RunState = 'completed' | 'failed' | 'cancelled';

/** Why a run was cancelled, machine-readable. */
export type CancelKind = 'caller' | 'reader_left' | 'stalled' | 'timeout';

/** Backpressure statistics of a run (live from a stream, final in its result). */
export interface Pressure {
  /** Items waiting unread now. */
  buffered: number;
  /** Bytes waiting unread now. */
  bytes: number;
  /** The most items ever waiting at once. */
  peak: number;
  /** The most bytes ever waiting at once. */
  peakBytes: number;
  /** Deltas merged into an earlier buffered delta. */
  coalesced: number;
  /** Items admitted although each alone exceeded the byte budget. */
  oversize: number;
  /** Whether the run was cancelled because its reader stalled. */
  stalled: boolean;
  /** Items posted after the terminal item: dropped, never numbered. */
  droppedAfterTerminal: number;
  /** Terminal items posted as ordinary items: refused. */
  refusedTerminals: number;
}

/**
 * The record of a finished operation. A failed or cancelled run RESOLVES with this record
 * (`state` says how it ended); only errors at the API edge (harness not found, already running,
 * bad options) reject.
 */
export interface RunResult {
  runId: string;
  state: RunState;
  /** The process exit code, when it exited. */
  exitCode?: number;
  /** The signal that ended the process, when one did. */
  signal?: number;
  /** The harness's session id, once seen. */
  sessionId?: string;
  /** Token usage totals. */
  usage: UsageTotals;
  /** The final answer (the message text after the last tool result); only for a completed run. */
  finalText?: string;
  /** Why it failed. */
  error?: string;
  /** Why it was cancelled, in words. */
  cancelReason?: string;
  /** Why it was cancelled, machine-readable. */
  cancelKind?: CancelKind;
  /** Backpressure statistics at the end. */
  pressure: Pressure;
  /** Decode statistics of the harness's stdout. */
  stats: DecodeStats;
  /** The sequence of the terminal item. */
  lastSequence: number;
  /** Problems with the input (oversize lines, invalid UTF-8), for people. */
  diagnostics?: string[];
  /** Wall-clock duration in milliseconds. */
  durationMs: number;
}
