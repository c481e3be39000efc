/**
 * Errors at the API edge, one `code` per core error kind (`core/src/error.rs`).
 *
 * - Bad arguments (an unknown agent or channel name, a wrong input type) throw a `TypeError`
 *   ({@link InvalidArgumentError}) with `code === 'INVALID_ARGUMENT'`.
 * - Everything else throws an {@link AgentStreamError} with the kind's `code`
 *   (`HARNESS_NOT_FOUND`, `SPAWN_FAILED`, `TIMEOUT`, …; `INTERNAL` for a bug, e.g. a caught
 *   Rust panic, which never takes the process down).
 *
 * Decoding never throws for bad input lines: they are counted in `Decoder.stats`.
 *
 * @module
 */

/** The core's error kinds (snake_case names). */
export type ErrorKind =
  | 'invalid_argument'
  | 'harness_not_found'
  | 'already_running'
  | 'spawn_failed'
  | 'cancelled'
  | 'timeout'
  | 'internal';

/** The `code` of an agentstream error: the kind in SCREAMING_SNAKE_CASE. */
export type ErrorCode =
  | 'INVALID_ARGUMENT'
  | 'HARNESS_NOT_FOUND'
  | 'ALREADY_RUNNING'
  | 'SPAWN_FAILED'
  | 'CANCELLED'
  | 'TIMEOUT'
  | 'INTERNAL';

/** Every code, in the core's order. */
export const ERROR_CODES: readonly ErrorCode[] = Object.freeze([
  'INVALID_ARGUMENT',
  'HARNESS_NOT_FOUND',
  'ALREADY_RUNNING',
  'SPAWN_FAILED',
  'CANCELLED',
  'TIMEOUT',
  'INTERNAL',
] as const);

function kindOf(code: ErrorCode): ErrorKind {
  return code.toLowerCase() as ErrorKind;
}

/** An agentstream error other than a bad argument: `code` says which kind. */
export class AgentStreamError extends Error {
  /** The kind, SCREAMING_SNAKE_CASE (`'TIMEOUT'`). */
  readonly code: ErrorCode;
  /** The kind, snake_case (`'timeout'`), as the core and the other languages name it. */
  readonly kind: ErrorKind;

  constructor(code: ErrorCode, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'AgentStreamError';
    this.code = code;
    this.kind = kindOf(code);
  }
}

/** A bad argument: a `TypeError` with `code === 'INVALID_ARGUMENT'`. */
export class InvalidArgumentError extends TypeError {
  readonly code: 'INVALID_ARGUMENT' = 'INVALID_ARGUMENT';
  readonly kind: 'invalid_argument' = 'invalid_argument';

  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'TypeError';
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
