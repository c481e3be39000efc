/**
 * agentstream for Node.js: run coding-agent CLIs (claude, codex, gemini, qwen, kimi, opencode,
 * droid) and receive their output as ACP-style events in real time, or decode recorded output.
 *
 * This wrapper holds no behaviour: every decision is made by the Rust core (through the native
 * addon in `../native/`); this package only converts shapes and errors and calls handlers.
 *
 * ```ts
 * import { Evolve, Decoder } from 'agentstream';
 * await using evolve = new Evolve({ config: { type: 'claude' } });
 * evolve.on('content', (event) => console.log(event.update.sessionUpdate));
 * const run = await evolve.run({ prompt: 'Hello', onEvent: (e) => console.log(e.type), timeoutMs: 60_000 });
 * const next = await evolve.run({ prompt: 'And now in French' }); // continues the conversation
 *
 * const decoder = new Decoder('gemini');
 * for (const event of decoder.feed(chunk)) console.log(event.update.sessionUpdate);
 * decoder.finish();
 *
 * const client = connect('http://127.0.0.1:8787', token);   // a run on `agentstream serve`
 * for await (const envelope of await client.run('claude', 'Hello')) console.log(envelope.sequence);
 * ```
 *
 * @module
 */

import { AgentStreamError, DecodeLimitError, InvalidArgumentError } from './errors';
import { agentName, call, describe, native } from './internal';
import { TapeShapes, readEvents } from './tape';
import type {
  AgentName,
  Channel,
  DecodeStats,
  DecoderInput,
  DecoderOptions,
  Diagnostic,
  HookEvent,
  LifecycleEvent,
  OutputEvent,
  ParseOptions,
  Replay,
  ReplayOptions,
} from './types';

export * from './types';
export * from './clientTypes';
export { BackgroundRun, Evolve, RunStream, __testPanicAsync } from './evolve';
export {
  Client,
  ConnectionLostError,
  DEFAULT_MAX_EVENT_BYTES,
  RemoteRun,
  ServerError,
  StreamGapError,
  connect,
  type ConnectOptions,
  type RemoteRunInfo,
  type RemoteRunOptions,
  type RemoteRunStatus,
  type StreamGap,
  type RemoteStreamOptions,
} from './client';
export {
  AgentStreamError,
  DecodeLimitError,
  ERROR_CODES,
  ERROR_TABLE,
  HandlerWarning,
  InvalidArgumentError,
  isAgentStreamError,
  type AnyAgentStreamError,
  type ErrorCode,
  type ErrorInfo,
  type ErrorKind,
} from './errors';

/** The version of this package (and of the Rust core it was built from). */
export const VERSION: string = call(() => native.coreVersion());

/** Every agent name, in documentation order. */
export const AGENTS: readonly AgentName[] = Object.freeze(call(() => native.agentNames()) as AgentName[]);

/** The four channel names `on(...)` accepts. */
export const CHANNELS: readonly Channel[] = Object.freeze(call(() => native.channelNames()) as Channel[]);

/** `Decoder`'s array for tape words: 16 KiB at first (a 64 KiB chunk of most harnesses' output
 * fits), doubled when a batch needs more, up to 4 MiB (larger batches bring their own). */
const TAPE_WORDS_INITIAL = 4096;
const TAPE_WORDS_MAX = 1 << 20;

/** A tape of events from the addon (`[text, words]`, see `tape.ts`) → events; `shapes` are
 * those of the tape's writer (one native decoder, or a fresh set for a one-off call). */
function events([text, words]: [string, Uint32Array], shapes: TapeShapes = new TapeShapes()): OutputEvent[] {
  return readEvents(text, words, shapes);
}

/** Bytes of any binary input, without copying; `undefined` for text. */
function bytesOf(input: DecoderInput, what: string): Uint8Array | undefined {
  if (typeof input === 'string') return undefined;
  if (input instanceof Uint8Array) return input;
  if (ArrayBuffer.isView(input)) return new Uint8Array(input.buffer, input.byteOffset, input.byteLength);
  if (input instanceof ArrayBuffer) return new Uint8Array(input);
  throw new InvalidArgumentError(
    `${what} expects a string, Buffer, Uint8Array, ArrayBuffer or ArrayBufferView, got ${describe(input)}`,
  );
}

/**
 * The stateful decoder of one run of one harness. Feed it the harness's stdout at any chunking;
 * it returns the events of every line completed so far. Never throws for bad input: lines that
 * are not JSON, not objects or of unknown types yield no event and are counted in
 * {@link Decoder.stats}.
 */
export class Decoder {
  readonly #native: InstanceType<typeof native.NativeDecoder>;
  /** The object shapes the native decoder's tapes have defined (see `tape.ts`). */
  readonly #shapes = new TapeShapes();
  readonly #raiseOnOversize: boolean;
  /** Diagnostics read by `onOversize: 'raise'` and not yet taken by the caller. */
  #pending: Diagnostic[] = [];
  /** Where the native decoder writes each batch's tape words (their count in the last element),
   * so that a batch makes no new `ArrayBuffer`; grown when a batch did not fit. */
  #words = new Uint32Array(TAPE_WORDS_INITIAL);

  /**
   * @param agent `claude`, `codex`, `gemini`, `qwen`, `kimi`, `opencode` or `droid`
   *   (`claude-code` and any letter case are accepted).
   * @throws {InvalidArgumentError} for an unknown agent (the message lists the valid names) or a
   *   bad option.
   */
  constructor(agent: AgentName | string, options: DecoderOptions = {}) {
    const name = agentName(agent, 'new Decoder()');
    if (options === null || typeof options !== 'object') {
      throw new InvalidArgumentError(`new Decoder(): options must be an object, got ${describe(options)}`);
    }
    const onOversize = options.onOversize ?? 'skip';
    if (onOversize !== 'skip' && onOversize !== 'raise') {
      throw new InvalidArgumentError(`new Decoder(): onOversize must be "skip" or "raise", not ${JSON.stringify(onOversize)}`);
    }
    this.#raiseOnOversize = onOversize === 'raise';
    const max = options.maxLineBytes;
    const redact = redactOption(options.redact, 'new Decoder()');
    this.#native = call(() => new native.NativeDecoder(name, max, redact));
  }

  /** Events from a native tape (the text alone when its words are in `#words`); with
   * `onOversize: 'raise'`, throws if a line was skipped. */
  #deliver(tape: string | [string, Uint32Array]): OutputEvent[] {
    let out: OutputEvent[];
    if (typeof tape === 'string') {
      const words = this.#words;
      out = readEvents(tape, words, this.#shapes, words[words.length - 1]);
    } else {
      out = events(tape, this.#shapes);
      const needed = tape[1].length + 1;
      if (needed > this.#words.length && needed <= TAPE_WORDS_MAX) {
        this.#words = new Uint32Array(2 ** Math.ceil(Math.log2(needed)));
      }
    }
    if (this.#raiseOnOversize) {
      const diags = JSON.parse(call(() => this.#native.takeDiagnosticsJson())) as Diagnostic[];
      this.#pending.push(...diags);
      const oversize = diags.filter((d) => d.message.includes('max_line_bytes'));
      const last = oversize[oversize.length - 1];
      if (last !== undefined) {
        throw new DecodeLimitError<OutputEvent>(`line ${last.line}: ${last.message}`, out, last.line);
      }
    }
    return out;
  }

  /** The agent this decoder reads (canonical name). */
  get agent(): AgentName {
    return call(() => this.#native.agent) as AgentName;
  }

  /**
   * Feed a chunk of stdout (text or bytes, split anywhere, even inside a UTF-8 character);
   * returns the events of every line it completes, in order.
   */
  feed(chunk: DecoderInput): OutputEvent[] {
    const bytes = bytesOf(chunk, 'Decoder.feed()');
    const words = this.#words;
    return this.#deliver(
      call(() =>
        bytes ? this.#native.feedTapeInto(bytes, words) : this.#native.feedStringTapeInto(chunk as string, words),
      ),
    );
  }

  /**
   * End of input: decodes a final line that has no newline and flushes held-back events (kimi's
   * multi-line errors). Later `feed`/`finish` calls return `[]`.
   */
  finish(): OutputEvent[] {
    return this.#deliver(call(() => this.#native.finishTape()));
  }

  /**
   * Like {@link Decoder.feed}, but returns the events as the text of a JSON array (`"[]"` when
   * none), exactly as the core serialises them: for forwarding events (a log, a socket, another
   * process) without parsing them in JavaScript. Over-long lines are always skipped here
   * (`onOversize` applies to `feed`/`finish`).
   */
  feedJson(chunk: DecoderInput): string {
    const bytes = bytesOf(chunk, 'Decoder.feedJson()');
    return call(() => (bytes ? this.#native.feed(bytes) : this.#native.feedString(chunk as string)));
  }

  /** Like {@link Decoder.finish}, as the text of a JSON array (see {@link Decoder.feedJson}). */
  finishJson(): string {
    return call(() => this.#native.finish());
  }

  /** Decode statistics so far. */
  get stats(): DecodeStats {
    return JSON.parse(call(() => this.#native.statsJson())) as DecodeStats;
  }

  /** The harness's session id, once seen (`undefined` before). */
  get sessionId(): string | undefined {
    return call(() => this.#native.sessionId) ?? undefined;
  }

  /** True while bytes of an unfinished line are held. */
  get hasPartialLine(): boolean {
    return call(() => this.#native.hasPartialLine);
  }

  /** Diagnostics since the last call (oversize lines skipped, invalid UTF-8 replaced). */
  takeDiagnostics(): Diagnostic[] {
    const taken = [...this.#pending, ...(JSON.parse(call(() => this.#native.takeDiagnosticsJson())) as Diagnostic[])];
    this.#pending = [];
    return taken;
  }
}

/** The `redact` option: a boolean, or absent (the default, on). */
function redactOption(value: unknown, what: string): boolean | undefined {
  if (value !== undefined && typeof value !== 'boolean') {
    throw new InvalidArgumentError(`${what}: options.redact must be a boolean, got ${describe(value)}`);
  }
  return value;
}

/**
 * Decode a whole recorded output at once (text or bytes). Secret shapes in tool-call inputs are
 * masked unless `options.redact` is `false`.
 * @throws {InvalidArgumentError} for an unknown agent or an input of the wrong type.
 */
export function parse(agent: AgentName | string, input: DecoderInput, options: ParseOptions = {}): OutputEvent[] {
  const name = agentName(agent, 'parse()');
  const bytes = bytesOf(input, 'parse()');
  if (options === null || typeof options !== 'object') {
    throw new InvalidArgumentError(`parse(): options must be an object, got ${describe(options)}`);
  }
  const redact = redactOption(options.redact, 'parse()');
  return events(
    call(() => (bytes ? native.parseTape(name, bytes, redact) : native.parseStringTape(name, input as string, redact))),
  );
}

/**
 * Replay a recorded output (a harness's stdout) through the whole pipeline — decoder, run
 * stream, terminal derivation, hook derivation — exactly as a live run would deliver it, minus
 * the process. Deterministic: a fixed run id (`replay`) and timestamp unless given.
 * @throws {InvalidArgumentError} for an unknown agent or an input of the wrong type.
 */
export function replay(agent: AgentName | string, input: DecoderInput, options: ReplayOptions = {}): Replay {
  const name = agentName(agent, 'replay()');
  const bytes = bytesOf(input, 'replay()') ?? Buffer.from(input as string, 'utf8');
  if (options === null || typeof options !== 'object') {
    throw new InvalidArgumentError(`replay(): options must be an object, got ${describe(options)}`);
  }
  for (const key of ['runId', 'agentId', 'timestamp'] as const) {
    const v = options[key];
    if (v !== undefined && typeof v !== 'string') {
      throw new InvalidArgumentError(`replay(): options.${key} must be a string, got ${describe(v)}`);
    }
  }
  const redact = redactOption(options.redact, 'replay()');
  return JSON.parse(
    call(() => native.replayJson(name, bytes, options.runId, options.agentId, options.timestamp, redact)),
  ) as Replay;
}

/**
 * True when an event list contains agent work: any update other than `error` and `usage`
 * (a run that only reported failures or accounting did nothing).
 */
export function didWork(events: Iterable<OutputEvent>): boolean {
  for (const e of events) {
    const kind = e.update.sessionUpdate;
    if (kind !== 'error' && kind !== 'usage') return true;
  }
  return false;
}

/**
 * Convert a hook event from the core's canonical JSON (`type`, `run_id`, …, `details`) into the
 * TypeScript shape (flat, camelCase). Used by the runner; exposed for tools that read recorded
 * hook files.
 */
export function hookFromCanonical(canonical: string | object): HookEvent {
  const json = typeof canonical === 'string' ? canonical : JSON.stringify(canonical);
  return JSON.parse(call(() => native.hookToCamelJson(json))) as HookEvent;
}

/**
 * Convert a lifecycle event from the core's JSON form (snake_case, as the Python binding and
 * recorded files carry it) into the TypeScript shape (camelCase: `sandboxId`, …).
 */
export function lifecycleFromCanonical(canonical: string | object): LifecycleEvent {
  const json = typeof canonical === 'string' ? canonical : JSON.stringify(canonical);
  return JSON.parse(call(() => native.lifecycleToCamelJson(json))) as LifecycleEvent;
}

/** @internal Test-only: makes the addon panic, to prove it surfaces as an `INTERNAL` error. */
export function __testPanic(message: string): never {
  call(() => native.__testPanic(message));
  throw new AgentStreamError('INTERNAL', 'the test panic did not panic');
}
