/**
 * Errors at the API edge, one `code` per core error kind (`core/src/error.rs`).
 * Every error has `code` (`'TIMEOUT'`), `kind` (`'timeout'`) and `numericCode` (`1006`).
 *
 * - Bad arguments (an unknown agent or channel name, a wrong input type) throw a `TypeError`
 *   ({@link InvalidArgumentError}) with `code === 'INVALID_ARGUMENT'`.
 * - Everything else throws an {@link AgentStreamError} with the kind's `code`
 *   (`HARNESS_NOT_FOUND`, `SPAWN_FAILED`, `TIMEOUT`, …; `INTERNAL` for a bug, e.g. a caught
 *   Rust panic, which never takes the process down); {@link DecodeLimitError} for an over-long
 *   line when the decoder was asked to raise.
 *
 * Decoding never throws for bad input lines: they are counted in `Decoder.stats`.
 *
 * @module
 */

import { ERROR_TABLE, type ErrorCode } from './generated/errors';
import type { ErrorKind } from './generated/types';

export { ERROR_TABLE, type ErrorCode, type ErrorInfo } from './generated/errors';
export type { ErrorKind } from './generated/types';

/** Every code, in the core's order (its numbers are 1001, 1002, …). */
export const ERROR_CODES: readonly ErrorCode[] = Object.freeze(ERROR_TABLE.map((e) => e.code));

function rowOf(code: ErrorCode) {
  const row = ERROR_TABLE.find((e) => e.code === code);
  if (row === undefined) throw new globalThis.Error(`agentstream: no error code ${code} in the error table`);
  return row;
}

function kindOf(code: ErrorCode): ErrorKind {
  return rowOf(code).kind;
}

/** The core's stable number of a code (1001 `HARNESS_NOT_FOUND` … 1009 `NOT_RUNNING`). */
function numberOf(code: ErrorCode): number {
  return rowOf(code).number;
}

/** An agentstream error other than a bad argument: `code` says which kind. */
export class AgentStreamError extends Error {
  /** The kind, SCREAMING_SNAKE_CASE (`'TIMEOUT'`). */
  readonly code: ErrorCode;
  /** The kind, snake_case (`'timeout'`), as the core and the other languages name it. */
  readonly kind: ErrorKind;
  /** The core's stable number for the kind (`1006` for `TIMEOUT`), as C and Python report it. */
  readonly numericCode: number;

  constructor(code: ErrorCode, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'AgentStreamError';
    this.code = code;
    this.kind = kindOf(code);
    this.numericCode = numberOf(code);
  }
}

/**
 * A line was longer than `maxLineBytes` and the decoder was created with `onOversize: 'raise'`.
 * `events` holds the events decoded from the other lines of the same call, so nothing is lost;
 * `line` is the 1-based number of the oversize line. The decoder stays usable.
 */
export class DecodeLimitError<E = unknown> extends AgentStreamError {
  declare readonly code: 'DECODE_LIMIT';
  /** The events of the call's other lines. */
  readonly events: E[];
  /** The 1-based line number of the (last) oversize line. */
  readonly line: number;

  constructor(message: string, events: E[], line: number) {
    super('DECODE_LIMIT', message);
    this.name = 'DecodeLimitError';
    this.events = events;
    this.line = line;
  }
}

/** A bad argument: a `TypeError` with `code === 'INVALID_ARGUMENT'`. */
export class InvalidArgumentError extends TypeError {
  readonly code: 'INVALID_ARGUMENT' = 'INVALID_ARGUMENT';
  readonly kind: 'invalid_argument' = 'invalid_argument';
  readonly numericCode: number = numberOf('INVALID_ARGUMENT');

  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'TypeError';
  }
}

/**
 * A handler (`on(...)` or `onEvent`) threw or rejected while a run delivered an event. It is
 * REPORTED, not thrown: agentstream passes it to `process.emitWarning` the first time each
 * handler fails in a run (later failures are counted in `RunResult.handlerErrors`), so
 * `process.on('warning', (w) => …)` receives it (and Node prints it, with the handler's stack as
 * its `detail`, unless warnings are silenced), and the run goes on with the next handler and the
 * next event.
 *
 * ```ts
 * process.on('warning', (w) => {
 *   if (w instanceof HandlerWarning) log(w.channel, w.sequence, w.event, w.cause);
 * });
 * ```
 */
export class HandlerWarning extends Error {
  /** `process.emitWarning` code. */
  readonly code = 'AGENTSTREAM_HANDLER_FAILED' as const;
  /** The handler's channel: `content`, `lifecycle`, `stdout`, `stderr`, or `onEvent`. */
  readonly channel: 'content' | 'lifecycle' | 'stdout' | 'stderr' | 'onEvent';
  /** The run the event belongs to. */
  readonly runId: string;
  /** The sequence of the stream item the event is (or, for a hook event, was derived from). */
  readonly sequence: number;
  /** The event the handler failed on, exactly as it was passed to the handler. */
  readonly event: unknown;
  /** What the handler threw (or rejected with). */
  declare readonly cause: unknown;
  /** The handler's stack (what it threw, with where): Node prints it under the warning. */
  readonly detail: string | undefined;

  constructor(
    channel: HandlerWarning['channel'],
    runId: string,
    sequence: number,
    event: unknown,
    cause: unknown,
  ) {
    const what = describeThrown(cause);
    super(`an ${channel === 'onEvent' ? 'onEvent' : `on('${channel}')`} handler failed on sequence ${sequence} of run ${runId}: ${what}`, { cause });
    this.name = 'AgentStreamHandlerWarning';
    this.channel = channel;
    this.runId = runId;
    this.sequence = sequence;
    this.event = event;
    let detail: string | undefined;
    try {
      detail = cause instanceof Error && typeof cause.stack === 'string' ? cause.stack : undefined;
    } catch {
      detail = undefined; // a stack getter that throws: no detail, the warning still goes out
    }
    this.detail = detail;
  }
}

/** @internal `Name: message` of what a handler threw, even when reading it throws (`throw
 * Object.create(null)`, a getter that throws): the report must never be what stops the run. */
export function describeThrown(e: unknown): string {
  try {
    return e instanceof Error ? `${e.name}: ${e.message}` : String(e);
  } catch {
    return `a thrown ${e === null ? 'null' : typeof e} (its message could not be read)`;
  }
}

/** Any error agentstream throws. */
export type AnyAgentStreamError = AgentStreamError | InvalidArgumentError;

/** True for every error agentstream throws (both classes). */
export function isAgentStreamError(e: unknown): e is AnyAgentStreamError {
  return e instanceof AgentStreamError || e instanceof InvalidArgumentError;
}

/** napi's own argument-conversion statuses: the caller passed a value of the wrong type. */
const NAPI_ARGUMENT_STATUSES = new Set([
  'InvalidArg',
  'ObjectExpected',
  'StringExpected',
  'NameExpected',
  'FunctionExpected',
  'NumberExpected',
  'BooleanExpected',
  'ArrayExpected',
  'BigintExpected',
  'DateExpected',
  'ArrayBufferExpected',
  'DetachableArraybufferExpected',
]);

/** Convert an error thrown by the native addon into the public error classes. */
export function fromNative(e: unknown): Error {
  if (isAgentStreamError(e)) return e;
  const err = e instanceof Error ? e : new Error(String(e));
  const code = (err as { code?: unknown }).code;
  if (code === 'INVALID_ARGUMENT' || (typeof code === 'string' && NAPI_ARGUMENT_STATUSES.has(code))) {
    return new InvalidArgumentError(err.message);
  }
  if (typeof code === 'string' && (ERROR_CODES as readonly string[]).includes(code)) {
    return new AgentStreamError(code as ErrorCode, err.message);
  }
  return new AgentStreamError('INTERNAL', `internal error in agentstream: ${err.message}`, { cause: err });
}
