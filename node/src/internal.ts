/**
 * @internal Helpers shared by the modules of the wrapper: the native addon, error conversion,
 * value descriptions for messages. Not part of the public API.
 * @module
 */

import native = require('../native/index.js');

import { InvalidArgumentError, fromNative } from './errors';

export { native };

/** Run a native call; its errors become `AgentStreamError` / `InvalidArgumentError`. */
export function call<T>(f: () => T): T {
  try {
    return f();
  } catch (e) {
    throw fromNative(e);
  }
}

/** A short description of a value's type, for error messages. */
export function describe(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'Array';
  if (typeof value === 'object') return (value as object).constructor?.name ?? 'object';
  return typeof value;
}

/** `agent` if it is a string, else an `InvalidArgumentError` naming the valid agents. */
export function agentName(agent: unknown, what: string): string {
  if (typeof agent !== 'string') {
    const names = call(() => native.agentNames()).join(', ');
    throw new InvalidArgumentError(`${what}: agent must be a string (one of ${names}), got ${describe(agent)}`);
  }
  return agent;
}
