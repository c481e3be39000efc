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

