/**
 * `Evolve`: run a coding-agent CLI (or any command) through the Rust core's process runner and
 * receive its output in real time — `on(channel, handler)`, `onEvent` hook handlers, or
 * `for await` over the sequenced stream.
 *
 * Delivery model: this module PULLS batches of deliveries from the core (`nextBatch`, one JSON
 * array string per batch, parsed with `JSON.parse`) and calls the handlers one at a time, in
 * sequence order, awaiting any promise a handler returns before the next delivery. No Rust
 * thread calls into JavaScript; the core's backpressure sees a reader exactly as fast as the
 * handlers; and nothing holds Node's event loop open but a pending pull or result, so the process
 * can exit as soon as no run is active. Every decision (ordering, the one terminal, coalescing,
 * cancellation, hook derivation) is the core's; this module converts shapes and calls handlers.
 *
 * @module
 */

import { HandlerWarning, InvalidArgumentError, fromNative } from './errors';
import { agentName, call, describe, native } from './internal';
import type {
  AgentConfig,
  AgentName,
  BackpressureOptions,
  Channel,
  ChannelHandler,
  Envelope,
  EvolveOptions,
  ExecuteCommandOptions,
  HookEvent,
  HookHandler,
  Pressure,
  RunOptions,
  RunResult,
} from './types';

type NativeRun = InstanceType<typeof native.NativeRun>;
type NativeSession = InstanceType<typeof native.NativeSession>;
type NativeRunOptions = Parameters<NativeSession['startRun']>[0];

/** Deliveries taken per pull. */
const BATCH = 256;

/** One delivery of a batch: a stream envelope (has `channel`) or a hook event (has `type`). */
type Delivery = Envelope | HookEvent;

type AnyHandler = (payload: unknown) => unknown;

const EMPTY: readonly AnyHandler[] = Object.freeze([]);

function isThenable(value: unknown): value is PromiseLike<unknown> {
  return value !== null && (typeof value === 'object' || typeof value === 'function') && typeof (value as { then?: unknown }).then === 'function';
}

/**
 * Calls the handlers of each delivery of ONE run, in order, one at a time. Synchronous handlers
 * cost no promise; a handler that returns a promise is awaited before anything else is called.
 */
class Sink {
  readonly #lists: Readonly<Record<Channel, readonly AnyHandler[]>>;
  readonly #onEvent: HookHandler | undefined;
  readonly #hookList: readonly AnyHandler[];
  runId = '';

  constructor(lists: Readonly<Record<Channel, readonly AnyHandler[]>>, onEvent: HookHandler | undefined) {
    this.#lists = lists;
    this.#onEvent = onEvent;
    this.#hookList = onEvent === undefined ? EMPTY : [onEvent as AnyHandler];
  }

  /** Whether anything listens (else the run is await-only: no reader is attached). */
  get listening(): boolean {
    const l = this.#lists;
    return this.#onEvent !== undefined || l.content.length + l.lifecycle.length + l.stdout.length + l.stderr.length > 0;
  }

  /** What the handlers listen to now, as `nextBatch`'s mask (1 content, 2 lifecycle, 4 stdout, 8 stderr, 16 hooks). */
  get mask(): number {
    const l = this.#lists;
    return (
      (l.content.length > 0 ? 1 : 0) |
      (l.lifecycle.length > 0 ? 2 : 0) |
      (l.stdout.length > 0 ? 4 : 0) |
      (l.stderr.length > 0 ? 8 : 0) |
      (this.#onEvent !== undefined ? 16 : 0)
    );
  }

  /** Deliver one; returns a promise only when a handler returned one. */
  deliver(d: Delivery): Promise<void> | undefined {
    if ('channel' in d) {
      const list = this.#lists[d.channel];
      return list.length === 0 ? undefined : this.#each(list, d.channel, d.event, d.sequence);
    }
    return this.#hookList.length === 0 ? undefined : this.#each(this.#hookList, 'onEvent', d, d.sequence);
  }

  #each(list: readonly AnyHandler[], channel: HandlerWarning['channel'], payload: unknown, sequence: number): Promise<void> | undefined {
    for (let i = 0; i < list.length; i++) {
      let r: unknown;
      try {
        const h = list[i]!;
        r = h(payload);
      } catch (e) {
        this.#report(channel, sequence, payload, e);
        continue;
      }
      if (isThenable(r)) return this.#rest(r, list, i + 1, channel, payload, sequence);
    }
    return undefined;
  }

  async #rest(
    pending: PromiseLike<unknown>,
    list: readonly AnyHandler[],
    from: number,
    channel: HandlerWarning['channel'],
    payload: unknown,
    sequence: number,
  ): Promise<void> {
    try {
      await pending;
    } catch (e) {
      this.#report(channel, sequence, payload, e);
    }
    for (let i = from; i < list.length; i++) {
      try {
        const h = list[i]!;
        const r = h(payload);
        if (isThenable(r)) await r;
      } catch (e) {
        this.#report(channel, sequence, payload, e);
      }
    }
  }

  #report(channel: HandlerWarning['channel'], sequence: number, payload: unknown, e: unknown): void {
    process.emitWarning(new HandlerWarning(channel, this.runId, sequence, payload, e));
  }
}

/** Parse a batch (JSON array string from the addon). */
function batch(json: string): Delivery[] {
  return JSON.parse(json) as Delivery[];
}

/**
 * Read `run` to its end, delivering to `sink`. Only what a handler listens to is serialized by
 * the addon (the mask is re-read at every pull, so `on()` during a run takes effect).
 */
async function pump(run: NativeRun, sink: Sink): Promise<void> {
  for (;;) {
    const json = await pull(run, sink.mask);
    if (json === null) return;
    const items = batch(json);
    for (let i = 0; i < items.length; i++) {
      const p = sink.deliver(items[i]!);
      if (p !== undefined) await p;
    }
  }
}

async function pull(run: NativeRun, mask?: number): Promise<string | null> {
  try {
    return await run.nextBatch(BATCH, mask);
  } catch (e) {
    throw fromNative(e);
  }
}

async function waitResult(run: NativeRun): Promise<RunResult> {
  try {
    return JSON.parse(await run.wait()) as RunResult;
  } catch (e) {
    throw fromNative(e);
  }
}

// ------------------------------------------------------------------------------------------------
// Option conversion (types and shapes only; the core validates ranges and says what is wrong)
// ------------------------------------------------------------------------------------------------

function object(value: unknown, what: string): Record<string, unknown> {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    throw new InvalidArgumentError(`${what} must be an object, got ${describe(value)}`);
  }
  return value as Record<string, unknown>;
}

function optString(o: Record<string, unknown>, key: string, what: string): string | undefined {
  const v = o[key];
  if (v === undefined) return undefined;
  if (typeof v !== 'string') throw new InvalidArgumentError(`${what}.${key} must be a string, got ${describe(v)}`);
  return v;
}

function optNumber(o: Record<string, unknown>, key: string, what: string): number | undefined {
  const v = o[key];
  if (v === undefined) return undefined;
  if (typeof v !== 'number' || Number.isNaN(v)) {
    throw new InvalidArgumentError(`${what}.${key} must be a number, got ${describe(v)}`);
  }
  return v;
}

function optBoolean(o: Record<string, unknown>, key: string, what: string): boolean | undefined {
  const v = o[key];
  if (v === undefined) return undefined;
  if (typeof v !== 'boolean') throw new InvalidArgumentError(`${what}.${key} must be a boolean, got ${describe(v)}`);
  return v;
}

function optStrings(o: Record<string, unknown>, key: string, what: string): string[] | undefined {
  const v = o[key];
  if (v === undefined) return undefined;
  if (!Array.isArray(v) || !v.every((x) => typeof x === 'string')) {
    throw new InvalidArgumentError(`${what}.${key} must be an array of strings, got ${describe(v)}`);
  }
  return [...(v as string[])];
}

function optEnv(o: Record<string, unknown>, key: string, what: string): Record<string, string> | undefined {
  const v = o[key];
  if (v === undefined) return undefined;
  const env = object(v, `${what}.${key}`);
  const out: Record<string, string> = {};
  for (const [k, x] of Object.entries(env)) {
    if (typeof x !== 'string') throw new InvalidArgumentError(`${what}.${key}.${k} must be a string, got ${describe(x)}`);
    out[k] = x;
  }
  return out;
}

function optHandler(o: Record<string, unknown>, what: string): HookHandler | undefined {
  const v = o['onEvent'];
  if (v === undefined) return undefined;
  if (typeof v !== 'function') throw new InvalidArgumentError(`${what}.onEvent must be a function, got ${describe(v)}`);
  return v as HookHandler;
}

/** The fields every operation takes, in the addon's shape. */
function operation(o: Record<string, unknown>, what: string, listening: boolean, hooks: boolean): NativeRunOptions {
  const out: NativeRunOptions = { hooks, attachReader: listening };
  const timeout = optNumber(o, 'timeout', what);
  if (timeout !== undefined) out.timeoutMs = timeout;
  const grace = optNumber(o, 'killGrace', what);
  if (grace !== undefined) out.killGraceMs = grace;
  const background = optBoolean(o, 'background', what);
  if (background !== undefined) out.background = background;
  if (o['backpressure'] !== undefined) {
    const b = object(o['backpressure'], `${what}.backpressure`) as Record<keyof BackpressureOptions, unknown>;
    const w = `${what}.backpressure`;
    const highWater = optNumber(b, 'highWater', w);
    const byteBudget = optNumber(b, 'byteBudget', w);
    const stallSeconds = optNumber(b, 'stallSeconds', w);
    if (highWater !== undefined) out.highWater = highWater;
    if (byteBudget !== undefined) out.byteBudget = byteBudget;
    if (stallSeconds !== undefined) out.stallSeconds = stallSeconds;
  }
  return out;
}

function runOptions(options: RunOptions, what: string, sinkFor: (onEvent: HookHandler | undefined) => Sink, forceReader: boolean) {
  const o = object(options, `${what} options`);
  if (typeof o['prompt'] !== 'string') {
    throw new InvalidArgumentError(`${what} needs { prompt: string }, got prompt: ${describe(o['prompt'])}`);
  }
  const onEvent = optHandler(o, what);
  const sink = sinkFor(onEvent);
  const native = operation(o, what, forceReader || sink.listening, onEvent !== undefined);
  native.prompt = o['prompt'];
  const redact = optBoolean(o, 'redact', what);
  if (redact !== undefined) native.redact = redact;
  const tools = optStrings(o, 'idempotentTools', what);
  if (tools !== undefined) native.idempotentTools = tools;
  return { sink, native };
}

/** A shell string runs through `sh -c`; an array is the argv itself. */
function commandArgv(command: unknown, what: string): string[] {
  if (typeof command === 'string') {
    if (command.trim() === '') throw new InvalidArgumentError(`${what} needs a command, e.g. 'ls -la'`);
    return ['sh', '-c', command];
  }
  if (Array.isArray(command) && command.length > 0 && command.every((x) => typeof x === 'string')) {
    return [...(command as string[])];
  }
  throw new InvalidArgumentError(`${what} needs { command: string | string[] } (a non-empty array), got ${describe(command)}`);
}

/**
 * An agent you run: one harness configuration, one operation at a time.
 *
 * ```ts
 * const evolve = new Evolve({ config: { type: 'claude' } });
 * evolve.on('content', (event) => console.log(event.update.sessionUpdate));
 * evolve.on('lifecycle', (event) => console.log(event.reason, event.sandbox));
 * const run = await evolve.run({ prompt: 'Hello', onEvent: (e) => console.log(e.type) });
 * console.log(run.state, run.finalText);
 *
 * for await (const envelope of evolve.stream({ prompt: 'Hello' })) console.log(envelope.sequence);
 * ```
 */
export class Evolve {
  /** The configuration, with `type` normalised to the canonical agent name. */
  readonly config: Readonly<AgentConfig & { type: AgentName }>;
  readonly #handlers: Record<Channel, Set<AnyHandler>> = {
    content: new Set(),
    lifecycle: new Set(),
    stdout: new Set(),
    stderr: new Set(),
  };
  /** Handler arrays, rebuilt by on()/off(): each run reads the arrays current at each delivery. */
  #lists: Record<Channel, readonly AnyHandler[]> = { content: EMPTY, lifecycle: EMPTY, stdout: EMPTY, stderr: EMPTY };
  readonly #session: NativeSession;

  /** @throws {InvalidArgumentError} when `config.type` is not a known agent or an option has the wrong type. */
  constructor(options: EvolveOptions) {
    if (options === null || typeof options !== 'object' || options.config === null || typeof options.config !== 'object') {
      throw new InvalidArgumentError("new Evolve() expects { config: { type: '<agent>' } }");
    }
    const c = options.config as unknown as Record<string, unknown>;
    const what = 'new Evolve(): config';
    const type = call(() => native.checkAgent(agentName(c['type'], 'new Evolve()'))) as AgentName;
    const config: ConstructorParameters<typeof native.NativeSession>[0] = { agent: type };
    const agentId = optString(c, 'agentId', what);
    const bin = optString(c, 'bin', what);
    const model = optString(c, 'model', what);
    const cwd = optString(c, 'cwd', what);
    const extraArgs = optStrings(c, 'extraArgs', what);
    const env = optEnv(c, 'env', what);
    if (agentId !== undefined) config.agentId = agentId;
    if (bin !== undefined) config.bin = bin;
    if (model !== undefined) config.model = model;
    if (cwd !== undefined) config.cwd = cwd;
    if (extraArgs !== undefined) config.extraArgs = extraArgs;
    if (env !== undefined) config.env = env;
    this.#session = call(() => new native.NativeSession(config));
    this.config = Object.freeze({ ...options.config, type });
  }

  /**
   * Subscribe to a channel: `content` (OutputEvent), `lifecycle` (LifecycleEvent), `stdout` and
   * `stderr` (raw text). Handlers get every delivery of every later run (whether it was started
   * with `run`, `executeCommand` or `stream`), in stream order, one at a time; a returned promise
   * is awaited first. A handler that throws is reported (`HandlerWarning` via
   * `process.emitWarning`) and the run goes on.
   * @throws {InvalidArgumentError} (a `TypeError`) for any other name; the message lists the four.
   */
  on<C extends Channel>(name: C, handler: ChannelHandler<C>): this {
    const channel = this.#channel(name);
    if (typeof handler !== 'function') {
      throw new InvalidArgumentError(`on('${channel}', handler): handler must be a function, got ${describe(handler)}`);
    }
    this.#handlers[channel].add(handler as AnyHandler);
    this.#rebuild(channel);
    return this;
  }

  /** Remove a handler added with {@link Evolve.on}. */
  off<C extends Channel>(name: C, handler: ChannelHandler<C>): this {
    const channel = this.#channel(name);
    this.#handlers[channel].delete(handler as AnyHandler);
    this.#rebuild(channel);
    return this;
  }

  /** How many handlers a channel has. */
  listenerCount(name: Channel): number {
    return this.#handlers[this.#channel(name)].size;
  }

  #rebuild(channel: Channel): void {
    this.#lists = { ...this.#lists, [channel]: Object.freeze([...this.#handlers[channel]]) };
  }

  #channel<C extends Channel>(name: C): C {
    // The core's Channel rule names the four; reuse its message for non-strings too.
    return call(() => native.checkChannel(typeof name === 'string' ? name : String(name))) as C;
  }

  /** A sink reading the CURRENT handler arrays at each delivery. */
  #sink(onEvent: HookHandler | undefined): Sink {
    const self = this;
    const lists = {
      get content() {
        return self.#lists.content;
      },
      get lifecycle() {
        return self.#lists.lifecycle;
      },
      get stdout() {
        return self.#lists.stdout;
      },
      get stderr() {
        return self.#lists.stderr;
      },
    };
    return new Sink(lists, onEvent);
  }

  /**
   * Run the harness with `prompt`, streaming every event to the `on(...)` handlers and `onEvent`
   * in real time; resolves to the run's {@link RunResult} once the last event was delivered.
   * A run that fails (non-zero exit, killed, cut mid-line) or is cancelled (timeout, interrupt,
   * kill) RESOLVES with `state: 'failed' | 'cancelled'`. Without handlers and `onEvent` the run is
   * await-only (nothing is buffered).
   * @throws {AgentStreamError} (rejects) `HARNESS_NOT_FOUND` (the executable is missing),
   *   `ALREADY_RUNNING` (one operation at a time per `Evolve`), `SPAWN_FAILED`;
   *   {@link InvalidArgumentError} for bad options.
   */
  async run(options: RunOptions): Promise<RunResult> {
    const { sink, native: o } = runOptions(options, 'run()', (h) => this.#sink(h), false);
    return this.#drive(call(() => this.#session.startRun(o)), sink, o.attachReader);
  }

  /**
   * Run any command (a shell string through `sh -c`, or an argv array) with the same streaming,
   * lifecycle (`command_start` … `command_complete`/`command_failed`) and result as `run`; its
   * output is not decoded (no `content` events).
   * @throws {AgentStreamError} (rejects) as {@link Evolve.run}.
   */
  async executeCommand(options: ExecuteCommandOptions): Promise<RunResult> {
    const what = 'executeCommand()';
    const o = object(options, `${what} options`);
    const argv = commandArgv(o['command'], what);
    const onEvent = optHandler(o, what);
    const sink = this.#sink(onEvent);
    const n = operation(o, what, sink.listening, onEvent !== undefined);
    n.argv = argv;
    const cwd = optString(o, 'cwd', what);
    const env = optEnv(o, 'env', what);
    if (cwd !== undefined) n.cwd = cwd;
    if (env !== undefined) n.env = env;
    return this.#drive(call(() => this.#session.startCommand(n)), sink, n.attachReader);
  }

  async #drive(run: NativeRun, sink: Sink, attached: boolean): Promise<RunResult> {
    sink.runId = run.runId;
    if (attached) {
      try {
        await pump(run, sink);
      } catch (e) {
        run.readerLeft(); // an internal error while reading: cancel through the one path
        throw e;
      }
    }
    return waitResult(run);
  }

  /**
   * Run the harness and iterate its sequenced stream: `for await (const envelope of
   * evolve.stream({ prompt }))`. Each {@link Envelope} is `{ runId, sequence, channel, event,
   * coalesced? }` (gapless `sequence` from 0, exactly one terminal lifecycle event, last); the
   * `on(...)` handlers and `onEvent` are called for each delivery before it is yielded. Leaving
   * the loop early (`break`, `return`, a throw) cancels the run (`cancelKind: 'reader_left'`).
   * `await stream.result` gives the {@link RunResult}. The run starts at once; throws (not
   * rejects) the errors of {@link Evolve.run}.
   */
  stream(options: RunOptions): RunStream {
    const { sink, native: o } = runOptions(options, 'stream()', (h) => this.#sink(h), true);
    return new RunStream(call(() => this.#session.startRun(o)), sink);
  }

  /** The id of the active run, if one is active. */
  get activeRunId(): string | undefined {
    return call(() => this.#session.activeRunId) ?? undefined;
  }

  /**
   * Pause the active run: SIGSTOP to its process group (lifecycle `sandbox_pause`).
   * @throws {AgentStreamError} `NOT_RUNNING` when no run is active.
   */
  async pause(): Promise<void> {
    call(() => this.#session.pause());
  }

  /** Resume a paused run: SIGCONT (lifecycle `sandbox_resume`). @throws {AgentStreamError} `NOT_RUNNING`. */
  async resume(): Promise<void> {
    call(() => this.#session.resume());
  }

  /**
   * Interrupt the active run: SIGTERM to its process group, SIGKILL after the grace period; it
   * ends `cancelled` (lifecycle `run_interrupted`) with `reason`.
   * @throws {AgentStreamError} `NOT_RUNNING` when no run is active.
   */
  async interrupt(reason = 'interrupted'): Promise<void> {
    if (typeof reason !== 'string') throw new InvalidArgumentError(`interrupt(reason): reason must be a string, got ${describe(reason)}`);
    call(() => this.#session.interrupt(reason));
  }

  /** Kill the active run at once (SIGKILL; lifecycle `sandbox_killed`, then `run_interrupted`); a no-op without one. */
  async kill(): Promise<void> {
    call(() => this.#session.kill());
  }
}

/**
 * A running harness as an async iterator of its sequenced envelopes (from
 * {@link Evolve.stream}). Iterate it once, with `for await`; `result` resolves to the run's
 * {@link RunResult} whatever happens to the iteration.
 */
export class RunStream implements AsyncIterableIterator<Envelope> {
  /** The run's id. */
  readonly runId: string;
  /**
   * The run's result, once the run has finished and every delivery was handed out (to the
   * iterator, or after an early exit, to the remaining handlers). Never rejects for a failed or
   * cancelled run.
   */
  readonly result: Promise<RunResult>;
  readonly #run: NativeRun;
  readonly #sink: Sink;
  #queue: Delivery[] = [];
  #index = 0;
  #ended = false;
  #busy = false;
  #drained: Promise<void> | undefined;

  /** @internal Created by {@link Evolve.stream}. */
  constructor(run: NativeRun, sink: Sink) {
    this.#run = run;
    this.#sink = sink;
    this.runId = run.runId;
    sink.runId = this.runId;
    this.result = this.#result();
    // A result nobody awaits must not become an unhandled rejection (it never rejects for a
    // failed run; only an internal error could).
    this.result.catch(() => {});
  }

  async #result(): Promise<RunResult> {
    const result = await waitResult(this.#run);
    if (this.#drained !== undefined) await this.#drained;
    return result;
  }

  [Symbol.asyncIterator](): this {
    return this;
  }

  /** The next envelope (hook events go to `onEvent` on the way), or `done` after the terminal one. */
  async next(): Promise<IteratorResult<Envelope, undefined>> {
    if (this.#busy) {
      throw new InvalidArgumentError('RunStream.next() called while a previous next() is pending: iterate with for await');
    }
    this.#busy = true;
    try {
      for (;;) {
        if (this.#index < this.#queue.length) {
          const d = this.#queue[this.#index++]!;
          const p = this.#sink.deliver(d);
          if (p !== undefined) await p;
          if ('channel' in d) return { value: d, done: false };
          continue;
        }
        if (this.#ended) return { value: undefined, done: true };
        const json = await pull(this.#run);
        if (json === null) {
          this.#ended = true;
        } else {
          this.#queue = batch(json);
          this.#index = 0;
        }
      }
    } finally {
      this.#busy = false;
    }
  }

  /**
   * Leave early (called by `break`): the run is cancelled through the core's one path (reason
   * "the reader left"; a no-op once the terminal envelope was read). Deliveries still to come go
   * to the `on(...)` handlers and `onEvent`, if any, so they too see exactly one terminal.
   */
  async return(): Promise<IteratorResult<Envelope, undefined>> {
    if (!this.#ended) {
      this.#ended = true;
      call(() => this.#run.readerLeft());
      if (this.#sink.listening) this.#drained = this.#drain().catch(() => {});
    }
    return { value: undefined, done: true };
  }

  async #drain(): Promise<void> {
    const rest = this.#queue.slice(this.#index);
    this.#queue = [];
    this.#index = 0;
    for (const d of rest) {
      const p = this.#sink.deliver(d);
      if (p !== undefined) await p;
    }
    await pump(this.#run, this.#sink);
  }

  /** Cancel the run (the first reason stands); the iterator then ends with the terminal envelope. */
  cancel(reason = 'cancelled by the caller'): void {
    call(() => this.#run.cancel(String(reason)));
  }

  /** Live backpressure statistics of the run. */
  get pressure(): Pressure {
    return JSON.parse(call(() => this.#run.pressureJson())) as Pressure;
  }
}

/** @internal Test-only: a promise whose Rust task panics, to prove it rejects with `INTERNAL`. */
export async function __testPanicAsync(message: string): Promise<string> {
  try {
    return await native.__testPanicAsync(message);
  } catch (e) {
    throw fromNative(e);
  }
}

