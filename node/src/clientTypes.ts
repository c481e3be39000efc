/**
 * The types of the `Evolve` API: its configuration, the options of a run, a command and a
 * stream, the run limits and `status()`. Kept apart from `./types` (the wire shapes, generated
 * from the core's schema) so either can be replaced without touching the other.
 *
 * Times are MILLISECONDS everywhere, as in every agentstream language.
 *
 * @module
 */

import type { AgentName, AgentState, HookHandler, RunState, SandboxState } from './types';

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
 * The bounds of one run; an absent field keeps the core's default (256 items, 8 MiB,
 * 30 000 ms, 16 MiB). Above `highWater` unread items or `byteBudget` unread bytes, arriving text
 * deltas merge into the newest buffered one (`coalesced`); nothing else is ever merged or
 * dropped. Unread items waiting longer than `stallMs` get the run cancelled
 * (`cancelKind: 'stalled'`). A harness stdout line longer than `maxLineBytes` is skipped and
 * reported.
 */
export interface Limits {
  /** Unread items before text deltas merge (0 = from the first delta). */
  highWater?: number;
  /** Unread bytes (JSON length of each event) before text deltas merge; > 0. */
  byteBudget?: number;
  /** Milliseconds unread items may wait before the run is cancelled as stalled; > 0. */
  stallMs?: number;
  /** The longest harness stdout line decoded, in bytes; > 0. */
  maxLineBytes?: number;
}

/** Options every operation takes. */
export interface OperationOptions {
  /** Hook events of the run (`run.started` or `run.resumed`, `tool.started`, …, one terminal), awaited in order. */
  onEvent?: HookHandler;
  /** Stop the run after this many milliseconds (it ends `cancelled`, `cancelKind: 'timeout'`; hook `run.stopped`). */
  timeoutMs?: number;
  /** Working directory of this operation (default: the config's, else the current one). */
  cwd?: string;
  /** Extra environment of this operation, on top of the config's. */
  env?: Record<string, string>;
  /** The bounds of the buffer between the run and its reader. */
  limits?: Limits;
  /** Milliseconds between SIGTERM and SIGKILL when the run is cancelled (default 5000). */
  killGraceMs?: number;
  /**
   * Aborting it cancels the run through the core's one path (`cancelKind: 'caller'`, the
   * abort reason in `cancelReason`): the run still resolves with its result. Already aborted:
   * nothing starts and the call rejects with `signal.reason`.
   */
  signal?: AbortSignal;
}

/** Options of `evolve.stream(…)`. */
export interface StreamOptions extends OperationOptions {
  /** The prompt. */
  prompt: string;
  /** The model for this run only (default: the config's). */
  model?: string;
  /** Continue this harness session instead of the one this `Evolve` continues. */
  resume?: string;
  /** Mask secret shapes in tool-call inputs (default `true`; answer text is never altered). */
  redact?: boolean;
  /** Tools whose in-flight calls are safe to retry when the run is cancelled (hook `tool.failed` with `retryable`). */
  idempotentTools?: string[];
}

/** Options of `evolve.run(…)`: a run `run()` resolves with the result of. */
export interface RunOptions extends StreamOptions {
  /** Not a background run (see {@link BackgroundRunOptions}). */
  background?: false;
}

/**
 * Options of a background `evolve.run(…)`: it resolves at once with a `BackgroundRun`, whose
 * `result` resolves when the run ends (terminal reasons `run_background_*`).
 */
export interface BackgroundRunOptions extends StreamOptions {
  background: true;
}

/** Options of `evolve.executeCommand(…)`. */
export interface ExecuteCommandOptions extends OperationOptions {
  /** A shell command (run with `sh -c`), or the program and its arguments. */
  command: string | readonly string[];
  /** Not a background command (see {@link BackgroundCommandOptions}). */
  background?: false;
}

/** Options of a background `evolve.executeCommand(…)`: it resolves at once with a `BackgroundRun`. */
export interface BackgroundCommandOptions extends OperationOptions {
  command: string | readonly string[];
  background: true;
}

/** What `evolve.status()` reports (the seed's `status()`). */
export interface EvolveStatus {
  /** The harness. */
  agent: AgentName;
  /** The local environment's state (`ready`, `running`, `paused`, …). */
  sandbox: SandboxState;
  /** The agent's state (`idle`, `running`, `interrupted`, `error`). */
  agentState: AgentState;
  /** Whether a run was ever started from this `Evolve`. */
  hasRun: boolean;
  /** The active run's id, while one runs. */
  activeRunId?: string;
  /** The harness session the next run continues (absent: the next run starts a new one). */
  sessionId?: string;
  /** How the last run ended, once one did. */
  lastStatus?: RunState;
}
