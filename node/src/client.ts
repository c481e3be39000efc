/**
 * A client for `agentstream serve`: start runs on a server and stream their events, resuming by
 * sequence after a dropped connection. Uses the global `fetch` of Node 20.
 *
 * ```ts
 * import { connect } from 'agentstream';
 * const client = connect('http://127.0.0.1:8787', token);
 * const run = await client.run('claude', 'Fix the failing test');
 * for await (const envelope of run) {            // { runId, sequence, channel, event }
 *   if (envelope.channel === 'content') console.log(envelope.event.update.sessionUpdate);
 * }
 * const result = await run.wait();                // RunResult, as for a local run
 *
 * for await (const envelope of client.stream(run.id, { after: 41 })) { … } // resume after 41
 * ```
 *
 * The envelopes have the same shape as a local run's ({@link Envelope}: camelCase, lifecycle
 * events as {@link LifecycleEvent}), exactly one terminal lifecycle event last. A connection
 * that drops is reconnected with the last sequence received, so nothing is yielded twice and
 * nothing is skipped. When the server no longer has the envelopes after that point (older than
 * its replay buffer) it says so and the stream throws {@link StreamGapError} — never a silent
 * hole (`gaps: 'skip'` calls `onGap` and goes on).
 *
 * @module
 */

import { call, native } from './internal';
import type { Envelope, LifecycleEvent, RunResult } from './types';

/** Where a run is on the server. */
export type RemoteRunStatus = 'running' | 'completed' | 'failed' | 'cancelled';

/** A run as the server reports it (`GET /v1/runs/{id}`). */
export interface RemoteRunInfo {
  /** The run id (the `runId` of its envelopes). */
  id: string;
  /** The configured agent's name. */
  agent: string;
  /** The model asked for, if any. */
  model?: string;
  /** The harness session continued, if any. */
  resume?: string;
  /** The prompt (in `runs()`, its first 500 bytes: see `promptTruncated`). */
  prompt: string;
  /** In `runs()`: true when `prompt` was cut (`get(id)` has it whole). */
  promptTruncated?: boolean;
  /** Where it is. */
  status: RemoteRunStatus;
  /** When it started (ISO 8601 UTC). */
  createdAt: string;
  /** When its terminal envelope was delivered. */
  endedAt?: string;
  /** The last sequence number delivered so far. */
  lastSequence?: number;
  /** The run's result once it ended (the same shape as a local run's; not in `runs()`). */
  result?: RunResult;
  /** The path of its Server-Sent Events stream. */
  events: string;
  /** The path of its WebSocket stream. */
  ws: string;
  /** The worker that runs it, in a cluster (`serve --nats`; absent when the server runs it). */
  worker?: string;
}

/** The server's notice that envelopes are missing (SSE `event: gap`). */
export interface StreamGap {
  type: 'gap';
  runId: string;
  /** `evicted`: older than the replay buffer; `too_slow`: this reader fell too far behind. */
  reason: 'evicted' | 'too_slow';
  /** The sequence the reader had reached (absent: from the start). */
  after?: number;
  /** How many sequence numbers it will not see. */
  missing: number;
  /** Where the stream goes on (absent when it ended with the notice). */
  resumeFrom?: number;
  /** For people. */
  message: string;
}

/** Options of {@link connect}. */
export interface ConnectOptions {
  /** Milliseconds a request, or a stream without any byte (the server sends a heartbeat every
   *  15 s), may wait before it is retried (default 60 000). */
  timeoutMs?: number;
  /** Reconnection attempts in a row, without receiving anything, before giving up (default 10).
   *  A `429` to a reconnect (the server has not yet freed the slot of the stream's previous
   *  connection) is one too, made after the `Retry-After` the server asks for (at most 30 s). */
  maxRetries?: number;
  /** The largest stream event or response body read, in bytes (default 256 MiB, at least 1024):
   *  more is a `protocol_error`, so a server or proxy that never ends a line cannot grow this
   *  process without bound. The default is far above the largest envelope a server sends. */
  maxEventBytes?: number;
}

/** {@link ConnectOptions.maxEventBytes} when not given. */
export const DEFAULT_MAX_EVENT_BYTES = 256 * 1024 * 1024;

/** Options of {@link Client.stream}. */
export interface RemoteStreamOptions {
  /** Resume right after this sequence number (default: from the start). */
  after?: number;
  /** What to do when the server no longer has some envelopes: `'throw'` a
   *  {@link StreamGapError} (default) or `'skip'` them (after calling `onGap`). */
  gaps?: 'throw' | 'skip';
  /** Told about each gap skipped: once for any missing sequence number (a later notice of
   *  numbers it was already told about, such as the `evicted` one after a `too_slow`, is not
   *  passed on again). */
  onGap?: (gap: StreamGap) => void;
  /** Stop the stream (the iteration ends). */
  signal?: AbortSignal;
}

/** Options of {@link Client.run}. */
export interface RemoteRunOptions {
  /** The model, passed with the harness's own flag. */
  model?: string;
  /** A harness session id to continue (the `sessionId` of an earlier run's events). */
  resume?: string;
}

/** The server refused a request: `status` (HTTP), `error` (its code: `unauthorized`,
 *  `not_found`, `invalid_field`, `limit_reached`, …) and, for bad input, the `field` at fault. */
export class ServerError extends Error {
  readonly status: number;
  readonly error: string;
  readonly field: string | undefined;

  constructor(status: number, error: string, message: string, field?: string) {
    super(`${status} ${error}: ${message}${field ? ` (field: ${field})` : ''}`);
    this.name = 'ServerError';
    this.status = status;
    this.error = error;
    this.field = field;
  }
}

/** The server no longer has the envelopes after the point the stream reached. */
export class StreamGapError extends Error {
  readonly gap: StreamGap;

  constructor(gap: StreamGap) {
    super(gap.message);
    this.name = 'StreamGapError';
    this.gap = gap;
  }
}

/** The server could not be reached again within `maxRetries` attempts. */
export class ConnectionLostError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'ConnectionLostError';
  }
}

/** The keys whose values are the harness's own records, kept verbatim (core/src/casing.rs). */
const VERBATIM = new Set(['arguments', 'raw_output', 'output', 'result', 'extra', 'usage']);

/** snake_case → camelCase keys of our shapes, by the core's rule (core/src/casing.rs). */
function camelKeys(value: unknown): unknown {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return value;
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(value as Record<string, unknown>)) {
    out[k.replace(/_(.)/g, (_, c: string) => c.toUpperCase())] = VERBATIM.has(k) ? v : camelKeys(v);
  }
  return out;
}

function runInfo(wire: Record<string, unknown>): RemoteRunInfo {
  const info = { ...wire } as unknown as RemoteRunInfo;
  if (wire.result) info.result = camelKeys(wire.result) as RunResult;
  return info;
}

/** A wire envelope as a local run delivers it: lifecycle events camelCase (the addon converts
 *  them, by the core's rule); `undefined` for a lifecycle reason this version does not know. */
function envelope(wire: Record<string, unknown>): Envelope | undefined {
  if (wire.channel !== 'lifecycle') return wire as unknown as Envelope;
  try {
    const event = JSON.parse(call(() => native.lifecycleToCamelJson(JSON.stringify(wire.event)))) as LifecycleEvent;
    return { ...wire, event } as unknown as Envelope;
  } catch {
    return undefined; // a newer server's lifecycle reason: skipped, as decodeEnvelope would
  }
}

/**
 * A `200` stream that does not speak the protocol (not the server, or a proxy rewriting it): an
 * error at once, never retried.
 */
function protocolError(path: string, what: string): ServerError {
  return new ServerError(
    200,
    'protocol_error',
    `${path} sent ${what}; is the URL an agentstream server's, and does a proxy in between rewrite or buffer the stream?`,
  );
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function isEnvelope(v: unknown): v is Record<string, unknown> {
  return isObject(v) && typeof v.runId === 'string' && Number.isInteger(v.sequence) &&
    typeof v.channel === 'string' && 'event' in v;
}

/** The body's text, reading at most `max` bytes (`over`: there was more; the rest is not read). */
async function readAtMost(response: Response, max: number): Promise<{ text: string; over: boolean }> {
  if (!response.body) return { text: '', over: false };
  const reader = response.body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > max) {
      await reader.cancel().catch(() => {});
      return { text: '', over: true };
    }
    chunks.push(value);
  }
  return { text: Buffer.concat(chunks).toString('utf8'), over: false };
}

async function serverError(response: Response, max: number): Promise<ServerError> {
  const { text } = await readAtMost(response, max);
  try {
    const body = JSON.parse(text) as { error?: string; message?: string; field?: string };
    return new ServerError(response.status, body.error ?? 'error', body.message ?? '', body.field);
  } catch {
    return new ServerError(response.status, 'http_error', text.slice(0, 500));
  }
}

/** The longest wait a `Retry-After` asks for that a stream honours: a hint of hours would hold
 *  the iteration that long for a slot that is usually free within seconds. */
const RETRY_AFTER_CAP_MS = 30_000;

/** A `Retry-After` in milliseconds (its HTTP-date form is not used: clocks differ). */
function retryAfterMs(value: string | null): number | undefined {
  const text = value?.trim() ?? '';
  return /^\d+$/.test(text) ? Number(text) * 1000 : undefined;
}

function count(value: unknown): number | undefined {
  return Number.isSafeInteger(value) && (value as number) >= 0 ? (value as number) : undefined;
}

/** The last sequence number a gap notice says is missing (they run from right after `after`,
 *  or from 0, through it); `undefined` when the notice does not say. */
function missingThrough(gap: StreamGap): number | undefined {
  const missing = count(gap.missing);
  if (!missing) return undefined;
  const after: unknown = gap.after;
  if (after === undefined || after === null) return missing - 1;
  const reached = count(after);
  return reached === undefined ? undefined : reached + missing;
}

function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const done = (): void => {
      clearTimeout(timer);
      // A long-lived signal must not collect one listener per retry.
      signal?.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal?.addEventListener('abort', done, { once: true });
  });
}

/** A connection to one `agentstream serve` as one tenant (its bearer token). */
export class Client {
  /** The server's base URL. */
  readonly url: string;
  readonly #token: string;
  readonly #timeoutMs: number;
  readonly #maxRetries: number;
  readonly #maxEventBytes: number;

  constructor(url: string, token: string, options: ConnectOptions = {}) {
    let parsed: URL;
    try {
      parsed = new URL(url);
    } catch {
      throw new TypeError(`url must be http(s)://host[:port][/prefix], not ${JSON.stringify(url)}`);
    }
    if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') {
      throw new TypeError(`url must be http(s)://host[:port][/prefix], not ${JSON.stringify(url)}`);
    }
    if (typeof token !== 'string' || token === '') {
      throw new TypeError('token is empty: give the bearer token the server printed or its operator issued');
    }
    this.url = url.replace(/\/+$/, '');
    this.#token = token;
    this.#timeoutMs = options.timeoutMs ?? 60_000;
    this.#maxRetries = options.maxRetries ?? 10;
    this.#maxEventBytes = options.maxEventBytes ?? DEFAULT_MAX_EVENT_BYTES;
    if (!Number.isSafeInteger(this.#maxEventBytes) || this.#maxEventBytes < 1024) {
      throw new RangeError(`maxEventBytes must be an integer of at least 1024, not ${options.maxEventBytes}`);
    }
  }

  /** Never shows the token. */
  toString(): string {
    return `agentstream.Client(${this.url})`;
  }

  async #request(method: string, path: string, body?: object): Promise<unknown> {
    const init: RequestInit = {
      method,
      headers: {
        Authorization: `Bearer ${this.#token}`,
        ...(body ? { 'Content-Type': 'application/json' } : {}),
      },
      signal: AbortSignal.timeout(this.#timeoutMs),
    };
    if (body) init.body = JSON.stringify(body);
    const response = await fetch(this.url + path, init);
    if (response.status >= 400) throw await serverError(response, this.#maxEventBytes);
    const { text, over } = await readAtMost(response, this.#maxEventBytes);
    if (over) throw protocolError(path, `a response body longer than maxEventBytes (${this.#maxEventBytes} bytes)`);
    if (!text) return undefined;
    try {
      return JSON.parse(text);
    } catch {
      // Not an agentstream server (a proxy's page, another service at that URL).
      throw protocolError(path, `a response that is not JSON: ${JSON.stringify(text.slice(0, 200))}`);
    }
  }

  /** The agent names this server runs. */
  async agents(): Promise<string[]> {
    return ((await this.#request('GET', '/v1/agents')) as { agents: string[] }).agents;
  }

  /** Start a run of the configured `agent` with `prompt`; iterate the returned
   *  {@link RemoteRun} for its envelopes, `wait()` for its result. */
  async run(agent: string, prompt: string, options: RemoteRunOptions = {}): Promise<RemoteRun> {
    const body: Record<string, string> = { agent, prompt };
    if (options.model !== undefined) body.model = options.model;
    if (options.resume !== undefined) body.resume = options.resume;
    const info = runInfo((await this.#request('POST', '/v1/runs', body)) as Record<string, unknown>);
    return new RemoteRun(this, info);
  }

  /**
   * This tenant's runs, newest first, as the API lists them: without `result`, the prompt cut
   * to 500 bytes (`promptTruncated`) — `get(id)` has the whole run. Every page is fetched.
   */
  async runs(): Promise<RemoteRunInfo[]> {
    const all: RemoteRunInfo[] = [];
    let path: string | undefined = '/v1/runs?limit=1000';
    while (path !== undefined) {
      const page = (await this.#request('GET', path)) as { runs: Record<string, unknown>[]; next?: unknown };
      all.push(...page.runs.map(runInfo));
      const next = page.next;
      if (next !== undefined && (typeof next !== 'string' || !next.startsWith('/v1/runs?') || next === path)) {
        throw protocolError('/v1/runs', `a next page that is not a list's: ${JSON.stringify(next)}`);
      }
      path = next;
    }
    return all;
  }

  /** One run: its status and, once ended, `result`. */
  async get(runId: string): Promise<RemoteRunInfo> {
    return runInfo((await this.#request('GET', `/v1/runs/${encodeURIComponent(runId)}`)) as Record<string, unknown>);
  }

  /** Cancel a run; the server waits (briefly) for it to end and returns it (still `running`
   *  when it did not end by then). Idempotent. In a cluster, a cancel the run's worker did not
   *  confirm rejects with a {@link ServerError} 503 `cancel_not_delivered` (its message says
   *  why; the run goes on, and cancelling again is safe). */
  async cancel(runId: string, reason?: string): Promise<RemoteRunInfo> {
    const body = reason ? { reason } : undefined;
    const info = await this.#request('POST', `/v1/runs/${encodeURIComponent(runId)}/cancel`, body);
    return runInfo(info as Record<string, unknown>);
  }

  /** The run's {@link RunResult} once it ended (`undefined` while it runs). */
  async result(runId: string): Promise<RunResult | undefined> {
    return (await this.get(runId)).result;
  }

  /** The run's envelopes after `options.after` (default: from the start) until the terminal one,
   *  reconnecting and resuming on its own. Leaving the `for await` early closes the connection. */
  stream(runId: string, options: RemoteStreamOptions = {}): AsyncGenerator<Envelope, void, undefined> {
    const { after, gaps = 'throw' } = options;
    if (after !== undefined && (!Number.isSafeInteger(after) || after < 0)) {
      throw new TypeError(`after must be a sequence number >= 0, not ${String(after)}`);
    }
    if (gaps !== 'throw' && gaps !== 'skip') {
      throw new TypeError(`gaps must be 'throw' or 'skip', not ${String(gaps)}`);
    }
    return this.#stream(`/v1/runs/${encodeURIComponent(runId)}/events`, options);
  }

  async *#stream(path: string, options: RemoteStreamOptions): AsyncGenerator<Envelope, void, undefined> {
    let last = options.after;
    let failures = 0;
    let maxDelay = 3000;
    // Whether the server accepted a request of this stream (200): a 429 after that is most
    // likely about this stream's own previous connection, a 429 before it a limit reached.
    let accepted = false;
    // The last sequence number a gap notice reported missing: a later notice of numbers up to
    // it is not reported again.
    let reported: number | undefined;
    for (;;) {
      if (options.signal?.aborted) return;
      const controller = new AbortController();
      const abort = (): void => controller.abort();
      options.signal?.addEventListener('abort', abort, { once: true });
      let idle: NodeJS.Timeout | undefined;
      const arm = (): void => {
        clearTimeout(idle);
        idle = setTimeout(abort, this.#timeoutMs);
      };
      let progressed = false;
      let failure: unknown;
      let retryAfter: number | undefined;
      try {
        arm();
        const response = await fetch(this.url + path + (last !== undefined ? `?after=${last}` : ''), {
          headers: { Authorization: `Bearer ${this.#token}`, Accept: 'text/event-stream' },
          signal: controller.signal,
        });
        if (response.status === 204) return; // the stream already ended at `last`
        if (response.status >= 500) throw new Error(`server error ${response.status}`);
        if (response.status === 429 && accepted) {
          // Retried like a lost connection: the server frees the slot once it notices the
          // stream's previous connection gone.
          retryAfter = retryAfterMs(response.headers.get('retry-after'));
          const refused = await serverError(response, this.#maxEventBytes);
          throw new Error(`the server refused to resume the stream: ${refused.message}`, { cause: refused });
        }
        if (response.status !== 200) throw await serverError(response, this.#maxEventBytes);
        accepted = true;
        if (!response.body) throw new Error('a response without a body');
        const decoder = new TextDecoder('utf-8', { fatal: true });
        let buffer = '';
        // SSE lines may end in CRLF, CR or LF: read as LF. After a chunk that ended in CR, an LF
        // starting the next is the rest of that CRLF.
        let afterCR = false;
        // Bytes of the event being received (what is in `buffer`).
        let pending = 0;
        const maxEvent = this.#maxEventBytes;
        const tooLong = () => protocolError(path, `an event longer than maxEventBytes (${maxEvent} bytes)`);
        for await (const chunk of response.body as unknown as AsyncIterable<Uint8Array>) {
          arm();
          let text: string;
          try {
            text = decoder.decode(chunk, { stream: true });
          } catch {
            throw protocolError(path, 'bytes that are not UTF-8');
          }
          if (afterCR && text.startsWith('\n')) {
            text = text.slice(1);
            afterCR = false;
          }
          if (text !== '') afterCR = text.endsWith('\r');
          buffer += text.replace(/\r\n?/g, '\n');
          pending += chunk.byteLength;
          let end: number;
          let ended = false;
          while ((end = buffer.indexOf('\n\n')) !== -1) {
            ended = true;
            const block = buffer.slice(0, end);
            buffer = buffer.slice(end + 2);
            if (Buffer.byteLength(block) > maxEvent) throw tooLong();
            let event = 'message';
            const data: string[] = [];
            for (const line of block.split('\n')) {
              // A heartbeat: the connection worked for a while (a proxy that ends long
              // responses, a quiet run), so the response that ends after it is no failure.
              if (line.startsWith(':')) progressed = true;
              if (line === '' || line.startsWith(':')) continue;
              const colon = line.indexOf(':');
              const name = colon === -1 ? line : line.slice(0, colon);
              let value = colon === -1 ? '' : line.slice(colon + 1);
              if (value.startsWith(' ')) value = value.slice(1);
              if (name === 'data') data.push(value);
              else if (name === 'event') event = value;
              else if (name === 'retry' && /^\d+$/.test(value)) maxDelay = Number(value);
            }
            if (!data.length) continue;
            const text = data.join('\n');
            let payload: Record<string, unknown>;
            try {
              payload = JSON.parse(text) as Record<string, unknown>;
            } catch {
              throw protocolError(path, `an event whose data is not JSON: ${JSON.stringify(text.slice(0, 200))}`);
            }
            if (event === 'message' && !isEnvelope(payload)) {
              throw protocolError(path, `an event that is not an envelope: ${JSON.stringify(text.slice(0, 200))}`);
            }
            if (event === 'gap' && !isObject(payload)) {
              throw protocolError(path, `a gap that is not an object: ${JSON.stringify(text.slice(0, 200))}`);
            }
            if (event === 'gap') {
              const gap = payload as unknown as StreamGap;
              const through = missingThrough(gap);
              if (through === undefined || reported === undefined || through > reported) {
                if (options.gaps !== 'skip') throw new StreamGapError(gap);
                options.onGap?.(gap);
                if (through !== undefined) reported = through;
              }
              if (gap.resumeFrom !== undefined) {
                last = gap.resumeFrom - 1;
              } else if (through !== undefined && (last === undefined || through > last)) {
                // No resumeFrom: the response ends with the notice (`too_slow`, or a finished
                // run of which nothing is left). The numbers it reported are gone, so the
                // reconnect asks for what follows them; asked from the old point, the server
                // would report them again (as `evicted`), and for a finished run again and again.
                last = through;
              }
            } else if (event === 'message') {
              last = (payload.sequence as number) + ((payload.coalesced as number | undefined) ?? 0);
              progressed = true;
              const env = envelope(payload);
              if (env) yield env;
            }
          }
          // What is left is part of the next event: only its bytes count (the earlier ones
          // were in the events just read).
          if (ended) pending = Buffer.byteLength(buffer);
          if (pending > maxEvent) throw tooLong();
        }
        // The server ends a response after the terminal envelope; asked for what follows, it
        // answers 204. A response cut short (network, proxy) is resumed the same way.
      } catch (e) {
        if (e instanceof ServerError || e instanceof StreamGapError) throw e;
        if (options.signal?.aborted) return;
        failure = e;
      } finally {
        clearTimeout(idle);
        options.signal?.removeEventListener('abort', abort);
        controller.abort();
      }
      failures = progressed ? 0 : failures + 1;
      if (failures > this.#maxRetries) {
        throw new ConnectionLostError(
          `lost the stream of ${path} and could not resume after ${this.#maxRetries} attempts`,
          failure === undefined ? undefined : { cause: failure },
        );
      }
      if (failures > 0) {
        let delay = Math.min(500 * failures, maxDelay);
        if (retryAfter !== undefined) delay = Math.max(delay, Math.min(retryAfter, RETRY_AFTER_CAP_MS));
        await sleep(delay, options.signal);
      }
    }
  }
}

/** A run on the server: `for await` it for its envelopes (from the start, resuming on its own),
 *  `wait()` for its {@link RunResult}, `cancel()` to stop it. */
export class RemoteRun implements AsyncIterable<Envelope> {
  readonly client: Client;
  /** The run as the server reported it last. */
  info: RemoteRunInfo;

  constructor(client: Client, info: RemoteRunInfo) {
    this.client = client;
    this.info = info;
  }

  /** The run id. */
  get id(): string {
    return this.info.id;
  }

  [Symbol.asyncIterator](): AsyncGenerator<Envelope, void, undefined> {
    return this.client.stream(this.id);
  }

  /** Cancel the run (first reason stands); resolves to the run as the server then reports it
   *  (see {@link Client.cancel}, `cancel_not_delivered` included). */
  async cancel(reason?: string): Promise<RemoteRunInfo> {
    this.info = await this.client.cancel(this.id, reason);
    return this.info;
  }

  /** Resolves once the run ended, to its result (the same shape as a local run's). */
  async wait(pollMs = 200): Promise<RunResult> {
    for (;;) {
      const result = await this.client.result(this.id);
      if (result) return result;
      await sleep(pollMs);
    }
  }
}

/** A {@link Client} for the `agentstream serve` at `url` (`http://host:port`, or with a path
 *  prefix behind a proxy), as the tenant whose bearer `token` this is. Sends nothing yet. */
export function connect(url: string, token: string, options: ConnectOptions = {}): Client {
  return new Client(url, token, options);
}
