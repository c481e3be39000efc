/**
 * `Evolve`: run a coding-agent CLI (or any command) through the Rust core's bridge and receive
 * its output in real time — `on(channel, handler)`, `onEvent` hook handlers, or `for await`
 * over the sequenced stream.
 *
 * Every rule is the core's: option validation (messages name the field in camelCase), run vs.
 * command, which channels a run buffers (await-only when nothing listens), the harness
 * conversation successive runs continue, pause/resume/interrupt/kill, `status()`, when a result
 * is final, cancel-on-drop and handler-error counting. This module checks JavaScript types,
 * keeps the handler functions (under the core's subscription ids, called in the core's order)
 * and calls them.
 *
 * Delivery model: this module PULLS batches of deliveries from the core (`nextBatch`, one tape
 * per batch, read by `./tape`: what is ready, never a wait to fill it) and calls the handlers one at
 * a time, in sequence order, awaiting any promise a handler returns before the next delivery.
 * No Rust thread calls into JavaScript; nothing holds Node's event loop open but a pending pull
 * or result, so the process can exit as soon as no run is active.
 *
 * A handler that throws (or rejects) does not stop the run: the core counts it
 * (`RunResult.handlerErrors`) and says whether it is that handler's first failure on the run;
 * the first is reported through `process.emitWarning` as a {@link HandlerWarning} carrying the
 * handler's stack (printed by Node as the warning's detail), later ones are only counted.
 *
 * @module
 */

import { AgentStreamError, HandlerWarning, InvalidArgumentError, describeThrown, fromNative } from './errors';
import { agentName, call, describe, native } from './internal';
import { TapeShapes, readDeliveries } from './tape';
import type {
  AgentConfig,
  BackgroundCommandOptions,
  BackgroundRunOptions,
  EvolveOptions,
  EvolveStatus,
  ExecuteCommandOptions,
  RunOptions,
  StreamOptions,
} from './clientTypes';
import type { AgentName, Channel, ChannelHandler, Envelope, HookEvent, HookHandler, Pressure, RunResult } from './types';

type NativeRun = InstanceType<typeof native.NativeRun>;
type NativeClient = InstanceType<typeof native.NativeClient>;
type NativeRunOptions = Parameters<NativeClient['start']>[0];

// Node 20 defines Symbol.asyncDispose as Symbol.for('nodejs.asyncDispose'); give any runtime
// without it the same symbol, so `await using` (TypeScript's helpers look it up on Symbol) and
// Node agree on it.
(Symbol as { asyncDispose?: symbol }).asyncDispose ??= Symbol.for('nodejs.asyncDispose');

/** Deliveries taken per pull at most (the core also bounds a batch in bytes). */
const BATCH = 256;

/** The handler id of `onEvent` in the core's handler-error count (subscriptions start at 1). */
const ON_EVENT_ID = 0;

/** One delivery of a batch: a stream envelope (has `channel`) or a hook event (has `type`). */
type Delivery = Envelope | HookEvent;

type AnyHandler = (payload: unknown) => unknown;

/** The handlers of each channel in the core's order, and their subscription ids. */
interface Subscriptions {
  readonly lists: Readonly<Record<Channel, readonly AnyHandler[]>>;
  readonly ids: Readonly<Record<Channel, readonly number[]>>;
}

const NONE: Subscriptions = Object.freeze({
  lists: Object.freeze({ content: [], lifecycle: [], stdout: [], stderr: [] }),
  ids: Object.freeze({ content: [], lifecycle: [], stdout: [], stderr: [] }),
});

function isThenable(value: unknown): value is PromiseLike<unknown> {
  if (value === null || (typeof value !== 'object' && typeof value !== 'function')) return false;
  try {
    return typeof (value as { then?: unknown }).then === 'function';
  } catch {
    return false; // a `then` getter that throws: not a promise to wait for (and not the run's failure)
  }
}

/**
 * Waits that may be a handler waiting for its own run: results handed to a handler that returned
 * a promise still pending, and `close()` calls (each entry rejects the result with `BUSY`, or
 * ends the `close()`'s wait). A handler awaiting its own run's end can never go on (the run ends
 * after it returns); when Node has nothing else left to do (`beforeExit`), every entry is called,
 * the handler goes on (or fails), and the run goes on to its end.
 */
const pendingAsks = new Set<() => void>();
let watchingExit = false;

function watchForDeadlock(pending: PromiseLike<unknown>, asked: readonly ((reason: unknown) => void)[], runId: string): void {
  const breakIt = (): void => {
    const busy = new AgentStreamError(
      'BUSY',
      `run ${runId}: its own handler waits for its result, which comes only after the handler returns: ` +
        "await the result outside the run's handlers",
    );
    for (const reject of asked) reject(busy);
  };
  pendingAsks.add(breakIt);
  const done = (): void => {
    pendingAsks.delete(breakIt);
  };
  pending.then(done, done);
  watchExit();
}

function watchExit(): void {
  if (!watchingExit) {
    watchingExit = true;
    process.on('beforeExit', breakDeadlocks);
  }
}

/** Breaks every wait that may be a handler waiting for its own run (see {@link pendingAsks}). */
function breakDeadlocks(): void {
  const all = [...pendingAsks];
  pendingAsks.clear();
  for (const breakIt of all) breakIt();
}

/** The sink whose handler is being called now (its synchronous part), if any. */
let callingSink: Sink | undefined;

/**
 * Calls the handlers of each delivery of ONE run, in order, one at a time: the `on(...)`
 * handlers subscribed when the delivery is made, then `onEvent` for hook events. Synchronous
 * handlers cost no promise; a handler that returns a promise is awaited before anything else.
 */
class Sink {
  readonly #current: () => Subscriptions;
  readonly #hooks: readonly AnyHandler[];
  readonly #run: NativeRun;
  readonly #runId: string;
  /** True while a handler of this run is being called (its synchronous part). */
  #calling = false;
  /** The results handed out during that call, to reject if the handler waits on them for ever. */
  #asked: ((reason: unknown) => void)[] | undefined;
  /** The run's end as its `Evolve` tracks it (once launched). */
  done: Promise<unknown> | undefined;

  constructor(current: () => Subscriptions, onEvent: HookHandler | undefined, run: NativeRun) {
    this.#current = current;
    this.#hooks = onEvent === undefined ? [] : [onEvent as AnyHandler];
    this.#run = run;
    this.#runId = run.runId;
  }

  /** Deliver one; returns a promise only when a handler returned one. */
  deliver(d: Delivery): Promise<void> | undefined {
    if ('channel' in d) {
      const subs = this.#current();
      const list = subs.lists[d.channel];
      return list.length === 0 ? undefined : this.#each(list, subs.ids[d.channel], d.channel, d.event, d.sequence);
    }
    return this.#hooks.length === 0 ? undefined : this.#each(this.#hooks, [ON_EVENT_ID], 'onEvent', d, d.sequence);
  }

  /**
   * The run's result for someone who asked for it now: `result` itself, unless a handler of
   * this run is asking (in its synchronous part, before its first `await`). Then it is a
   * promise of the same result, which a handler that returns at once may use
   * (`handle.result.then(log)`); but if the handler returns a promise that is still pending
   * when Node has nothing else to do — it awaits its own run's end, which comes only after it
   * returns, and Node would exit as if all were done — that promise is rejected with a `BUSY`
   * error instead (see {@link breakDeadlocks}).
   */
  resultFor(result: Promise<RunResult>): Promise<RunResult> {
    if (!this.#calling) return result;
    return new Promise<RunResult>((resolve, reject) => {
      result.then(resolve, reject);
      (this.#asked ??= []).push(reject);
    });
  }

  /** Calls `handler` with `payload`, marking the call (see {@link Sink.resultFor}). */
  #call(handler: AnyHandler, payload: unknown): unknown {
    this.#calling = true;
    const outer = callingSink;
    callingSink = this;
    let r: unknown;
    try {
      r = handler(payload);
    } finally {
      this.#calling = false;
      callingSink = outer;
      const asked = this.#asked;
      this.#asked = undefined;
      if (asked !== undefined && isThenable(r)) watchForDeadlock(r, asked, this.#runId);
    }
    return r;
  }

  #each(list: readonly AnyHandler[], ids: readonly number[], channel: HandlerWarning['channel'], payload: unknown, sequence: number): Promise<void> | undefined {
    for (let i = 0; i < list.length; i++) {
      let r: unknown;
      try {
        r = this.#call(list[i]!, payload);
      } catch (e) {
        this.#report(ids[i]!, channel, sequence, payload, e);
        continue;
      }
      if (isThenable(r)) return this.#rest(r, list, ids, i, channel, payload, sequence);
    }
    return undefined;
  }

  async #rest(
    pending: PromiseLike<unknown>,
    list: readonly AnyHandler[],
    ids: readonly number[],
    at: number,
    channel: HandlerWarning['channel'],
    payload: unknown,
    sequence: number,
  ): Promise<void> {
    try {
      await pending;
    } catch (e) {
      this.#report(ids[at]!, channel, sequence, payload, e);
    }
    for (let i = at + 1; i < list.length; i++) {
      try {
        const r = this.#call(list[i]!, payload);
        if (isThenable(r)) await r;
      } catch (e) {
        this.#report(ids[i]!, channel, sequence, payload, e);
      }
    }
  }

  #report(id: number, channel: HandlerWarning['channel'], sequence: number, payload: unknown, e: unknown): void {
    const message = describeThrown(e);
    const first = call(() => this.#run.handlerFailed(id, channel === 'onEvent' ? 'on_event' : channel, sequence, message));
    if (first) process.emitWarning(new HandlerWarning(channel, this.#runId, sequence, payload, e));
  }
}

/** Read `run` to its end, delivering to `sink`. */
/** The object shapes of each native run's tapes: one set per run, whoever reads it (a stream
 * left early is read to its end by a pump). */
const RUN_SHAPES = new WeakMap<NativeRun, TapeShapes>();

function shapesOf(run: NativeRun): TapeShapes {
  let shapes = RUN_SHAPES.get(run);
  if (shapes === undefined) RUN_SHAPES.set(run, (shapes = new TapeShapes()));
  return shapes;
}

async function pump(run: NativeRun, sink: Sink): Promise<void> {
  const shapes = shapesOf(run);
  for (;;) {
    const tape = await pull(run);
    if (tape === null) return;
    const items = readDeliveries(tape[0], tape[1], shapes);
    for (let i = 0; i < items.length; i++) {
      const p = sink.deliver(items[i]!);
      if (p !== undefined) await p;
    }
  }
}

async function pull(run: NativeRun): Promise<[string, Uint32Array] | null> {
  try {
    for (;;) {
      // `undefined`: a wait woke with nothing to take (the core rechecks on a timer).
      const tape = await run.nextBatch(BATCH);
      if (tape !== undefined) return tape;
    }
  } catch (e) {
    throw fromNative(e);
  }
}

/** The result, once the run ended for its reader (the core's rule: never before). */
async function finalResult(run: NativeRun): Promise<RunResult> {
  try {
    await run.ended();
  } catch (e) {
    throw fromNative(e);
  }
  return JSON.parse(call(() => run.resultJson())) as RunResult;
}

/** Cancel `run` when `signal` aborts; returns the function that stops listening. */
function cancelOnAbort(signal: AbortSignal | undefined, run: NativeRun): () => void {
  if (signal === undefined) return () => {};
  const onAbort = (): void => {
    const reason: unknown = signal.reason;
    call(() => run.cancel(`aborted: ${reason instanceof Error ? reason.message : String(reason)}`));
  };
  if (signal.aborted) onAbort();
  else signal.addEventListener('abort', onAbort, { once: true });
  return () => signal.removeEventListener('abort', onAbort);
}

// ------------------------------------------------------------------------------------------------
// Option conversion (JavaScript types only; the core checks values and names the field)
// ------------------------------------------------------------------------------------------------

function object(value: unknown, what: string): Record<string, unknown> {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    throw new InvalidArgumentError(`${what} must be an object, got ${describe(value)}`);
  }
  return value as Record<string, unknown>;
}

/** `o[key]` if it is absent or passes `ok`, else an error naming the field and what it takes. */
function field<T>(o: Record<string, unknown>, key: string, what: string, type: string, ok: (v: unknown) => boolean): T | undefined {
  const v = o[key];
  if (v === undefined) return undefined;
  if (!ok(v)) throw new InvalidArgumentError(`${what}.${key} must be ${type}, got ${describe(v)}`);
  return v as T;
}

const isString = (v: unknown): boolean => typeof v === 'string';
const isNumber = (v: unknown): boolean => typeof v === 'number';
const isBoolean = (v: unknown): boolean => typeof v === 'boolean';
const isFunction = (v: unknown): boolean => typeof v === 'function';
const isStrings = (v: unknown): boolean => Array.isArray(v) && v.every(isString);

function env(o: Record<string, unknown>, what: string): Record<string, string> | undefined {
  if (o['env'] === undefined) return undefined;
  const e = object(o['env'], `${what}.env`);
  for (const [k, x] of Object.entries(e)) {
    if (typeof x !== 'string') throw new InvalidArgumentError(`${what}.env.${k} must be a string, got ${describe(x)}`);
  }
  return e as Record<string, string>;
}

/** Refuse keys an options object does not take (a misspelt or renamed option never passes silently). */
function known(o: Record<string, unknown>, keys: readonly string[], what: string): void {
  for (const k of Object.keys(o)) {
    if (!keys.includes(k)) throw new InvalidArgumentError(`${what}: unknown option ${JSON.stringify(k)} (options: ${keys.join(', ')})`);
  }
}

const OPERATION_KEYS = ['onEvent', 'timeoutMs', 'cwd', 'env', 'limits', 'killGraceMs', 'signal'] as const;
const STREAM_KEYS = [...OPERATION_KEYS, 'prompt', 'model', 'resume', 'redact', 'idempotentTools'] as const;
const RUN_KEYS = [...STREAM_KEYS, 'background'] as const;
const COMMAND_KEYS = [...OPERATION_KEYS, 'command', 'background'] as const;
const LIMIT_KEYS = ['highWater', 'byteBudget', 'stallMs', 'maxLineBytes'] as const;

/** What one operation asks for, in the addon's shape, and what stays in JavaScript. */
interface Operation {
  request: NativeRunOptions;
  onEvent: HookHandler | undefined;
  signal: AbortSignal | undefined;
  background: boolean;
}

function operation(options: unknown, what: string, keys: readonly string[], iterate: boolean): Operation {
  const o = object(options, `${what} options`);
  known(o, keys, what);
  const onEvent = field<HookHandler>(o, 'onEvent', what, 'a function', isFunction);
  const signal = field<AbortSignal>(o, 'signal', what, 'an AbortSignal', (v) => v instanceof AbortSignal);
  const request: NativeRunOptions = { hooks: onEvent !== undefined, iterate };
  const timeoutMs = field<number>(o, 'timeoutMs', what, 'a number of milliseconds', isNumber);
  const killGraceMs = field<number>(o, 'killGraceMs', what, 'a number of milliseconds', isNumber);
  const cwd = field<string>(o, 'cwd', what, 'a string', isString);
  const e = env(o, what);
  if (timeoutMs !== undefined) request.timeoutMs = timeoutMs;
  if (killGraceMs !== undefined) request.killGraceMs = killGraceMs;
  if (cwd !== undefined) request.cwd = cwd;
  if (e !== undefined) request.env = e;
  if (o['limits'] !== undefined) {
    const l = object(o['limits'], `${what}.limits`);
    const w = `${what}.limits`;
    known(l, LIMIT_KEYS, w);
    const highWater = field<number>(l, 'highWater', w, 'a number', isNumber);
    const byteBudget = field<number>(l, 'byteBudget', w, 'a number', isNumber);
    const stallMs = field<number>(l, 'stallMs', w, 'a number of milliseconds', isNumber);
    const maxLineBytes = field<number>(l, 'maxLineBytes', w, 'a number', isNumber);
    if (highWater !== undefined) request.highWater = highWater;
    if (byteBudget !== undefined) request.byteBudget = byteBudget;
    if (stallMs !== undefined) request.stallMs = stallMs;
    if (maxLineBytes !== undefined) request.maxLineBytes = maxLineBytes;
  }
  if (keys.includes('prompt')) {
    const prompt = o['prompt'];
    if (typeof prompt !== 'string') throw new InvalidArgumentError(`${what} needs { prompt: string }, got prompt: ${describe(prompt)}`);
    request.prompt = prompt;
    const model = field<string>(o, 'model', what, 'a string', isString);
    const resume = field<string>(o, 'resume', what, 'a string', isString);
    const redact = field<boolean>(o, 'redact', what, 'a boolean', isBoolean);
    const tools = field<string[]>(o, 'idempotentTools', what, 'an array of strings', isStrings);
    if (model !== undefined) request.model = model;
    if (resume !== undefined) request.resume = resume;
    if (redact !== undefined) request.redact = redact;
    if (tools !== undefined) request.idempotentTools = [...tools];
  } else {
    const command = o['command'];
    if (typeof command === 'string') request.shell = command;
    else if (isStrings(command)) request.command = [...(command as string[])];
    else throw new InvalidArgumentError(`${what} needs { command: string | string[] }, got ${describe(command)}`);
  }
  const background = field<boolean>(o, 'background', what, 'a boolean', isBoolean) ?? false;
  if (background) request.background = true;
  if (signal?.aborted) throw signal.reason;
  return { request, onEvent, signal, background };
}

// ------------------------------------------------------------------------------------------------
// Evolve
// ------------------------------------------------------------------------------------------------

/**
 * A run started with `background: true`: it goes on (its handlers are called) while the caller
 * does other things; `await handle.result` for its {@link RunResult}.
 */
export class BackgroundRun {
  /** The run's id. */
  readonly runId: string;
  readonly #result: Promise<RunResult>;
  readonly #sink: Sink;
  readonly #run: NativeRun;
  #done = false;

  /** @internal Created by {@link Evolve.run} and {@link Evolve.executeCommand}. */
  constructor(run: NativeRun, result: Promise<RunResult>, sink: Sink) {
    this.#run = run;
    this.runId = run.runId;
    this.#result = result;
    this.#sink = sink;
    result.then(
      () => (this.#done = true),
      () => (this.#done = true),
    );
  }

  /**
   * The run's result, once it ended and every delivery was handed to the handlers. One of the
   * run's own handlers may use it (`handle.result.then(log)`), but one that awaits it could
   * never go on (the result comes after it returns): asked for before the handler's first
   * `await`, it is rejected with an `AgentStreamError` of code `BUSY` once Node has nothing
   * else to do, instead of Node exiting as if all were done.
   */
  get result(): Promise<RunResult> {
    return this.#sink.resultFor(this.#result);
  }

  /** True once the run ended and its result is settled. */
  get done(): boolean {
    return this.#done;
  }

  /** Cancel the run (the first reason stands); its result then says `cancelled`. */
  cancel(reason = 'cancelled by the caller'): void {
    call(() => this.#run.cancel(String(reason)));
  }

  /** Live backpressure statistics of the run. */
  get pressure(): Pressure {
    return JSON.parse(call(() => this.#run.pressureJson())) as Pressure;
  }
}

/**
 * An agent you run: one harness configuration, one operation at a time. Successive runs
 * continue the same harness conversation ({@link Evolve.getSession} / {@link Evolve.setSession}
 * choose otherwise).
 *
 * ```ts
 * await using evolve = new Evolve({ config: { type: 'claude' } });
 * evolve.on('content', (event) => console.log(event.update.sessionUpdate));
 * const first = await evolve.run({ prompt: 'Hello', onEvent: (e) => console.log(e.type) });
 * const second = await evolve.run({ prompt: 'And now in French' }); // continues the conversation
 *
 * for await (const envelope of evolve.stream({ prompt: 'Hello' })) console.log(envelope.sequence);
 * ```
 */
export class Evolve {
  /** The configuration, with `type` normalised to the canonical agent name. */
  readonly config: Readonly<AgentConfig & { type: AgentName }>;
  readonly #client: NativeClient;
  readonly #handlers = new Map<number, AnyHandler>();
  /** Rebuilt by on()/off() from the core's subscription order; each delivery reads the current one. */
  #subs: Subscriptions = NONE;
  /** Completions of the runs started here that have not ended (awaited when disposing). */
  readonly #running = new Set<Promise<unknown>>();

  /** @throws {InvalidArgumentError} when `config.type` is not a known agent or a field is bad (the core's message names it). */
  constructor(options: EvolveOptions) {
    if (options === null || typeof options !== 'object' || options.config === null || typeof options.config !== 'object') {
      throw new InvalidArgumentError("new Evolve() expects { config: { type: '<agent>' } }");
    }
    const c = options.config as unknown as Record<string, unknown>;
    const what = 'new Evolve(): config';
    const config: ConstructorParameters<typeof native.NativeClient>[0] = { agent: agentName(c['type'], 'new Evolve()') };
    const agentId = field<string>(c, 'agentId', what, 'a string', isString);
    const bin = field<string>(c, 'bin', what, 'a string', isString);
    const model = field<string>(c, 'model', what, 'a string', isString);
    const cwd = field<string>(c, 'cwd', what, 'a string', isString);
    const extraArgs = field<string[]>(c, 'extraArgs', what, 'an array of strings', isStrings);
    const e = env(c, what);
    if (agentId !== undefined) config.agentId = agentId;
    if (bin !== undefined) config.bin = bin;
    if (model !== undefined) config.model = model;
    if (cwd !== undefined) config.cwd = cwd;
    if (extraArgs !== undefined) config.extraArgs = [...extraArgs];
    if (e !== undefined) config.env = e;
    this.#client = call(() => new native.NativeClient(config));
    this.config = Object.freeze({ ...options.config, type: call(() => this.#client.agent) as AgentName });
  }

  /**
   * Subscribe to a channel: `content` (OutputEvent), `lifecycle` (LifecycleEvent), `stdout` and
   * `stderr` (raw text). Handlers get every delivery of every later run (whether it was started
   * with `run`, `executeCommand` or `stream`), in stream order, one at a time, in the order they
   * were added; a returned promise is awaited first. A handler that throws is reported (the
   * first time per run: a {@link HandlerWarning} through `process.emitWarning`), counted, and
   * the run goes on.
   * @throws {InvalidArgumentError} (a `TypeError`) for any other name; the message lists the four.
   */
  on<C extends Channel>(name: C, handler: ChannelHandler<C>): this {
    const channel = this.#name(name);
    if (typeof handler !== 'function') {
      call(() => this.#client.subscribers(channel));
      throw new InvalidArgumentError(`on('${channel}', handler): handler must be a function, got ${describe(handler)}`);
    }
    this.#handlers.set(call(() => this.#client.on(channel)), handler as AnyHandler);
    this.#refresh(channel);
    return this;
  }

  /**
   * Remove `handler` from a channel, or every handler of it when `handler` is left out.
   * @throws {InvalidArgumentError} for an unknown channel name, as {@link Evolve.on}.
   */
  off<C extends Channel>(name: C, handler?: ChannelHandler<C>): this {
    const channel = this.#name(name);
    let removed: number[];
    if (handler === undefined) {
      removed = call(() => this.#client.off(channel));
    } else {
      removed = call(() => this.#client.subscribers(channel)).filter((id) => this.#handlers.get(id) === handler);
      for (const id of removed) call(() => this.#client.offId(id));
    }
    for (const id of removed) this.#handlers.delete(id);
    this.#refresh(channel);
    return this;
  }

  /** How many handlers a channel has. */
  listenerCount(name: Channel): number {
    return call(() => this.#client.subscribers(this.#name(name))).length;
  }

  #name<C extends Channel>(name: C): C {
    return (typeof name === 'string' ? name : String(name)) as C;
  }

  #refresh(channel: Channel): void {
    const ids = call(() => this.#client.subscribers(channel));
    const list = ids.map((id) => this.#handlers.get(id)!);
    this.#subs = {
      lists: { ...this.#subs.lists, [channel]: Object.freeze(list) },
      ids: { ...this.#subs.ids, [channel]: Object.freeze(ids) },
    };
  }

  #start(op: Operation): { run: NativeRun; sink: Sink } {
    const run = call(() => this.#client.start(op.request));
    return { run, sink: new Sink(() => this.#subs, op.onEvent, run) };
  }

  #track<T>(done: Promise<T>): Promise<T> {
    this.#running.add(done);
    const forget = (): void => void this.#running.delete(done);
    done.then(forget, forget);
    return done;
  }

  async #drive(run: NativeRun, sink: Sink, signal: AbortSignal | undefined): Promise<RunResult> {
    const stopListening = cancelOnAbort(signal, run);
    try {
      if (run.hasReader) {
        try {
          await pump(run, sink);
        } catch (e) {
          run.readerLeft(); // an internal error while reading: cancel through the one path
          throw e;
        }
      }
      return await finalResult(run);
    } finally {
      stopListening();
    }
  }

  #launch(op: Operation): Promise<RunResult> | BackgroundRun {
    const { run, sink } = this.#start(op);
    const done = this.#track(this.#drive(run, sink, op.signal));
    sink.done = done;
    if (!op.background) return done;
    done.catch(() => {}); // never an unhandled rejection: the caller reads `result`
    return new BackgroundRun(run, done, sink);
  }

  /**
   * Run the harness with `prompt`, streaming every event to the `on(...)` handlers and `onEvent`
   * in real time; resolves to the run's {@link RunResult} once the last event was delivered.
   * The run continues this `Evolve`'s harness conversation (`resume` picks another session);
   * `model`, `cwd` and `env` apply to this run only. A run that fails (non-zero exit, killed, cut
   * mid-line) or is cancelled (timeout, interrupt, kill, `signal`) RESOLVES with
   * `state: 'failed' | 'cancelled'`. Without handlers and `onEvent` the run is await-only
   * (nothing is buffered). With `background: true` it resolves at once with a
   * {@link BackgroundRun}.
   * @throws {AgentStreamError} (rejects) `HARNESS_NOT_FOUND` (the executable is missing),
   *   `ALREADY_RUNNING` (one operation at a time per `Evolve`), `SPAWN_FAILED`;
   *   {@link InvalidArgumentError} for bad options; `signal.reason` when `signal` was already aborted.
   */
  run(options: RunOptions): Promise<RunResult>;
  run(options: BackgroundRunOptions): Promise<BackgroundRun>;
  async run(options: RunOptions | BackgroundRunOptions): Promise<RunResult | BackgroundRun> {
    return this.#launch(operation(options, 'run()', RUN_KEYS, false));
  }

  /**
   * Run any command (a shell string through `sh -c`, or an argv array) with the same streaming,
   * lifecycle (`command_start` … `command_complete`/`command_failed`) and result as `run`; its
   * output is not decoded (no `content` events).
   * @throws {AgentStreamError} (rejects) as {@link Evolve.run}.
   */
  executeCommand(options: ExecuteCommandOptions): Promise<RunResult>;
  executeCommand(options: BackgroundCommandOptions): Promise<BackgroundRun>;
  async executeCommand(options: ExecuteCommandOptions | BackgroundCommandOptions): Promise<RunResult | BackgroundRun> {
    return this.#launch(operation(options, 'executeCommand()', COMMAND_KEYS, false));
  }

  /**
   * Run the harness and iterate its sequenced stream: `for await (const envelope of
   * evolve.stream({ prompt }))`. Each {@link Envelope} is `{ runId, sequence, channel, event,
   * coalesced? }` (gapless `sequence` from 0, exactly one terminal lifecycle event, last); the
   * `on(...)` handlers and `onEvent` are called for each delivery before it is yielded. Leaving
   * the loop early (`break`, `return`, a throw) cancels the run (`cancelKind: 'reader_left'`)
   * and hands the rest to the handlers. `await stream.result` gives the {@link RunResult} once
   * the stream was read to its end (by the loop, or by leaving it). The run starts at once;
   * throws (not rejects) the errors of {@link Evolve.run}.
   */
  stream(options: StreamOptions): RunStream {
    const op = operation(options, 'stream()', STREAM_KEYS, true);
    const { run, sink } = this.#start(op);
    // Not tracked for close(): a stream's result needs its reader, which close() cannot be.
    return new RunStream(run, sink, op.signal);
  }

  /** The sandbox and agent state, whether a run was ever started, the active run, the session the next run continues, how the last run ended. */
  status(): EvolveStatus {
    return JSON.parse(call(() => this.#client.statusJson())) as EvolveStatus;
  }

  /** The harness session the next run continues: the one the last run reported, or the one given to {@link Evolve.setSession}; `undefined` when the next run starts a new conversation. */
  getSession(): string | undefined {
    return call(() => this.#client.sessionId) ?? undefined;
  }

  /**
   * Choose the harness session the next run continues; `null` (or `undefined`) starts a new
   * conversation.
   * @throws {InvalidArgumentError} for an id the core refuses (empty, or starting with `-`).
   */
  setSession(sessionId: string | null | undefined): void {
    if (sessionId !== null && sessionId !== undefined && typeof sessionId !== 'string') {
      throw new InvalidArgumentError(`setSession(sessionId): sessionId must be a string or null, got ${describe(sessionId)}`);
    }
    call(() => this.#client.setSessionId(sessionId ?? null));
  }

  /** The id of the active run, if one is active. */
  get activeRunId(): string | undefined {
    return call(() => this.#client.activeRunId) ?? undefined;
  }

  /**
   * Pause the active run: SIGSTOP to its process group (lifecycle `sandbox_pause`).
   * @throws {AgentStreamError} (rejects) `NOT_RUNNING` when no run is active.
   */
  async pause(): Promise<void> {
    call(() => this.#client.pause());
  }

  /** Resume a paused run: SIGCONT (lifecycle `sandbox_resume`). @throws {AgentStreamError} (rejects) `NOT_RUNNING`. */
  async resume(): Promise<void> {
    call(() => this.#client.resume());
  }

  /**
   * Interrupt the active run: SIGTERM to its process group, SIGKILL after the grace period; it
   * ends `cancelled` (lifecycle `run_interrupted`) with `reason`. Returns whether anything was
   * interrupted (`false` when nothing runs).
   */
  interrupt(reason = 'interrupted by the caller'): boolean {
    if (typeof reason !== 'string') throw new InvalidArgumentError(`interrupt(reason): reason must be a string, got ${describe(reason)}`);
    return call(() => this.#client.interrupt(reason));
  }

  /** Kill the active run at once (SIGKILL; lifecycle `sandbox_killed`, then `run_interrupted`). Returns whether anything was killed. */
  kill(): boolean {
    return call(() => this.#client.kill());
  }

  /**
   * Kill a run still going on and wait until every run started here with `run` or
   * `executeCommand` has ended (a stream ends with its reader). Called from one of a run's
   * handlers, it does not wait for that run, which ends only after the handler returned (after
   * the handler's first `await` that is seen only when Node has nothing else to do: then it stops
   * waiting). The `Evolve` stays usable. `await using evolve = new Evolve(…)` calls it when the
   * scope ends.
   */
  async close(): Promise<void> {
    this.kill();
    const own = callingSink?.done;
    const ended = Promise.allSettled([...this.#running].filter((done) => done !== own));
    // From a handler after its first `await` (not seen above) it would wait for the handler's own
    // run, which waits for that handler: when Node has nothing else to do, stop waiting.
    await new Promise<void>((resolve) => {
      const giveUp = (): void => resolve();
      pendingAsks.add(giveUp);
      watchExit();
      void ended.then(() => {
        pendingAsks.delete(giveUp);
        resolve();
      });
    });
  }

  /** {@link Evolve.close}, for `await using`. */
  async [Symbol.asyncDispose](): Promise<void> {
    await this.close();
  }
}

/**
 * A running harness as an async iterator of its sequenced envelopes (from
 * {@link Evolve.stream}). Iterate it once, with `for await`.
 */
export class RunStream implements AsyncIterableIterator<Envelope> {
  /** The run's id. */
  readonly runId: string;
  readonly #result: Promise<RunResult>;
  readonly #run: NativeRun;
  readonly #sink: Sink;
  #queue: Delivery[] = [];
  #index = 0;
  #ended = false;
  /** `return()` was called: the reader left, the rest goes to the handlers. */
  #left = false;
  #busy = false;
  /** The step of the `next()` in flight. */
  #pending: Promise<unknown> | undefined;
  #markRead!: () => void;
  readonly #read = new Promise<void>((resolve) => (this.#markRead = resolve));
  /** Why reading failed (an internal error): the result rejects with it. */
  #readError: unknown = undefined;
  readonly #stopListening: () => void;

  /** @internal Created by {@link Evolve.stream}. */
  constructor(run: NativeRun, sink: Sink, signal: AbortSignal | undefined) {
    this.#run = run;
    this.#sink = sink;
    this.runId = run.runId;
    this.#stopListening = cancelOnAbort(signal, run);
    this.#result = this.#settle();
    // A result nobody awaits must not become an unhandled rejection (it never rejects for a
    // failed run; only an internal error could).
    this.#result.catch(() => {});
  }

  /**
   * The run's result, once the stream was read to its end: by the iterator, or after an early
   * exit, by handing the rest to the handlers. Never rejects for a failed or cancelled run;
   * awaited by one of the run's own handlers, it is rejected with `BUSY` (as
   * {@link BackgroundRun.result} is).
   */
  get result(): Promise<RunResult> {
    return this.#sink.resultFor(this.#result);
  }

  async #settle(): Promise<RunResult> {
    await this.#read;
    this.#stopListening();
    if (this.#readError !== undefined) throw this.#readError;
    return finalResult(this.#run);
  }

  /** Reading ended (the stream is over, or reading failed with `error`): the result can be had. */
  #readDone(error?: unknown): void {
    if (error !== undefined) this.#readError = error;
    this.#markRead();
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
    const step = this.#step();
    this.#pending = step;
    try {
      return await step;
    } finally {
      this.#busy = false;
      this.#pending = undefined;
    }
  }

  async #step(): Promise<IteratorResult<Envelope, undefined>> {
    for (;;) {
      // After `return()` (called while this step waited) the rest goes to the handlers only.
      if (this.#left) return { value: undefined, done: true };
      if (this.#index < this.#queue.length) {
        const d = this.#queue[this.#index++]!;
        const p = this.#sink.deliver(d);
        if (p !== undefined) await p;
        if ('channel' in d && !this.#left) return { value: d, done: false };
        continue;
      }
      if (this.#ended) return { value: undefined, done: true };
      let tape: [string, Uint32Array] | null;
      try {
        tape = await pull(this.#run);
      } catch (e) {
        this.#ended = true;
        this.#readDone(e);
        throw e;
      }
      if (tape === null) {
        this.#ended = true;
        this.#readDone();
      } else {
        this.#queue = readDeliveries(tape[0], tape[1], shapesOf(this.#run));
        this.#index = 0;
      }
    }
  }

  /**
   * Leave early (called by `break`): the run is cancelled through the core's one path (reason
   * "the reader left"; a no-op once the terminal envelope was read). Deliveries still to come go
   * to the `on(...)` handlers and `onEvent`, so they too see exactly one terminal — also when a
   * `next()` is still pending: it resolves `done`, and the rest is handed on after it.
   */
  async return(): Promise<IteratorResult<Envelope, undefined>> {
    if (!this.#ended && !this.#left) {
      this.#left = true;
      call(() => this.#run.readerLeft());
      const pending: Promise<unknown> = this.#pending ?? Promise.resolve();
      pending
        .then(
          () => this.#drain(),
          () => this.#drain(),
        )
        .then(
          () => this.#readDone(),
          (e: unknown) => this.#readDone(e),
        );
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
    // (The pending step may have read to the end already.)
    if (!this.#ended) await pump(this.#run, this.#sink);
    this.#ended = true;
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
