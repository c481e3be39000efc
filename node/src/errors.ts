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

/** The core's error kinds (snake_case names). */
export type ErrorKind =
  | 'harness_not_found'
  | 'already_running'
  | 'spawn_failed'
  | 'invalid_argument'
  | 'cancelled'
  | 'timeout'
  | 'decode_limit'
  | 'internal'
  | 'not_running'
  | 'null_argument'
  | 'invalid_handle'
  | 'busy'
  | 'buffer_too_small'
  | 'still_running'
  | 'panic'
  | 'cannot_resume'
  | 'unsupported';

/** The `code` of an agentstream error: the kind in SCREAMING_SNAKE_CASE. */
export type ErrorCode =
  | 'HARNESS_NOT_FOUND'
  | 'ALREADY_RUNNING'
  | 'SPAWN_FAILED'
  | 'INVALID_ARGUMENT'
  | 'CANCELLED'
  | 'TIMEOUT'
  | 'DECODE_LIMIT'
  | 'INTERNAL'
  | 'NOT_RUNNING'
  | 'NULL_ARGUMENT'
  | 'INVALID_HANDLE'
  | 'BUSY'
  | 'BUFFER_TOO_SMALL'
  | 'STILL_RUNNING'
  | 'PANIC'
  | 'CANNOT_RESUME'
  | 'UNSUPPORTED';

/** Every code, in the core's order (its numbers are 1001, 1002, …). */
export const ERROR_CODES: readonly ErrorCode[] = Object.freeze([
  'HARNESS_NOT_FOUND',
  'ALREADY_RUNNING',
  'SPAWN_FAILED',
  'INVALID_ARGUMENT',
  'CANCELLED',
  'TIMEOUT',
  'DECODE_LIMIT',
  'INTERNAL',
  'NOT_RUNNING',
  'NULL_ARGUMENT',
  'INVALID_HANDLE',
  'BUSY',
  'BUFFER_TOO_SMALL',
  'STILL_RUNNING',
  'PANIC',
  'CANNOT_RESUME',
  'UNSUPPORTED',
] as const);

function kindOf(code: ErrorCode): ErrorKind {
  return code.toLowerCase() as ErrorKind;
}

/** The core's stable number of a code (1001 `HARNESS_NOT_FOUND` … 1017 `UNSUPPORTED`). */
function numberOf(code: ErrorCode): number {
  return 1001 + ERROR_CODES.indexOf(code);
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
  readonly numericCode: number = 1004;

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
    const what = cause instanceof Error ? `${cause.name}: ${cause.message}` : String(cause);
    super(`an ${channel === 'onEvent' ? 'onEvent' : `on('${channel}')`} handler failed on sequence ${sequence} of run ${runId}: ${what}`, { cause });
    this.name = 'AgentStreamHandlerWarning';
    this.channel = channel;
    this.runId = runId;
    this.sequence = sequence;
    this.event = event;
    this.detail = cause instanceof Error && typeof cause.stack === 'string' ? cause.stack : undefined;
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
