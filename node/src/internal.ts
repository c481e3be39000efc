/**
 * @internal Helpers shared by the modules of the wrapper: the native addon, error conversion,
 * value descriptions for messages. Not part of the public API.
 * @module
 */

import { InvalidArgumentError, fromNative } from './errors';

type Native = typeof import('../native/index.js');

/** What to do when the addon does not load: the packages carry one for Linux x64 with glibc. */
export function addonLoadHint(platform: string, arch: string, glibc: string | undefined): string {
  const here = `${platform}-${arch}${platform === 'linux' ? (glibc ? ` (glibc ${glibc})` : ' (not glibc: musl?)') : ''}`;
  if (platform === 'linux' && arch === 'x64' && glibc !== undefined) {
    return (
      `agentstream: its native addon did not load on ${here}. It comes in the optional dependency ` +
      '`agentstream-linux-x64-gnu`: npm leaves it out with --omit=optional (or --no-optional), and a ' +
      'lock file written on another platform can miss it; install it beside agentstream, with the same version ' +
      '(`npm install agentstream-linux-x64-gnu@<the version of agentstream>`). It needs glibc 2.17 or newer.'
    );
  }
  return (
    `agentstream: no prebuilt native addon for ${here}: the published packages carry one for ` +
    'Linux x64 with glibc 2.17 or newer only. On another platform, build the addon from a clone of the ' +
    'repository (Rust and cargo needed): `npm install && npm run build` there, then install that folder.'
  );
}

function loadNative(): Native {
  try {
    return require('../native/index.js') as Native;
  } catch (cause) {
    const header = (process.report?.getReport() as { header?: { glibcVersionRuntime?: string } } | undefined)?.header;
    throw new Error(addonLoadHint(process.platform, process.arch, header?.glibcVersionRuntime), { cause });
  }
}

/** The native addon (napi-rs), loaded once. */
export const native: Native = loadNative();

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
