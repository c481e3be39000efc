/**
 * The public types of agentstream. The wire types (events, the envelope, hook events, the run
 * result, statistics, names) are GENERATED from the core's schema into `./generated/types.ts`
 * and re-exported here, so they cannot drift from what the core emits; this file holds the
 * hand-written API types around them (handlers, options).
 *
 * Optional properties (`?`) are ABSENT when unknown, never `null`, never guessed.
 *
 * @module
 */

import type {
  AgentName,
  Channel,
  DecodeStats,
  Envelope,
  HookEvent,
  LifecycleEvent,
  OutputEvent,
  RunOutcome,
} from './generated/types';

export * from './generated/types';

// =============================================================================
// Handlers
// =============================================================================

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

// =============================================================================
// Decoder and replay
// =============================================================================

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
}

/** Options of `replay`. */
export interface ReplayOptions {
  /** The run id stamped on every item (default `replay`). */
  runId?: string;
  /** The agent id of hook events (default: the agent's name). */
  agentId?: string;
  /** The timestamp of lifecycle and hook events (default `1970-01-01T00:00:00.000Z`). */
  timestamp?: string;
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
