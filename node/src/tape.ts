/**
 * Reads the addon's tapes (`bindings/node/src/tape/` describes the format and why it exists)
 * into exactly the objects `JSON.parse` makes of the core's JSON: the same keys in the same
 * order, absent optional keys left out, the same values.
 *
 * Every string is one `slice` of the batch's text (a cursor walks it in order); events are built
 * by literals of fixed shapes; so are the objects of the harness's own JSON (`rawInput`,
 * `rawOutput`, `extra`) and of lifecycle and hook events: each object shape the writer defines
 * becomes a function returning a literal with its keys, compiled once per reader ({@link
 * TapeShapes}). Values the writer keeps as JSON text are `JSON.parse`d in one call per batch.
 * `node/test/tape.test.mjs` compares the results with `JSON.parse` of the core's JSON.
 *
 * @internal
 */

import { native } from './internal';
import type {
  ContentBlock,
  Envelope,
  HookEvent,
  JsonObject,
  JsonValue,
  OutputEvent,
  SessionUpdate,
  TokenUsage,
  ToolCallContent,
  ToolCallLocation,
} from './types';

const UPDATE_KINDS = [
  'agent_message_chunk',
  'agent_thought_chunk',
  'user_message_chunk',
  'tool_call',
  'tool_call_update',
  'plan',
  'error',
  'usage',
] as const;
const TOOL_KINDS = ['read', 'edit', 'delete', 'move', 'search', 'execute', 'think', 'fetch', 'switch_mode', 'other'] as const;
const TOOL_STATUSES = ['pending', 'in_progress', 'completed', 'failed'] as const;
const PLAN_STATUSES = ['pending', 'in_progress', 'completed'] as const;
const PLAN_PRIORITIES = ['high', 'medium', 'low'] as const;

/** Envelope string codes (tape/mod.rs `ABSENT`, `SAME`, `NEW`). */
const SAME = 1;
const NEW = 2;

// f64 bits → number, big-endian words so the result does not depend on the platform's order.
const bits = new DataView(new ArrayBuffer(8));

type Factory = (r: Reader) => JsonObject;

/** Whether this runtime compiles code from strings (not under `--disallow-code-generation-from-strings`):
 * shapes need it; without it the writer keeps every JSON value as JSON text. */
const canCompile = ((): boolean => {
  try {
    return new Function('return 1')() === 1;
  } catch {
    return false;
  }
})();
if (!canCompile) native.tapeShapes(false);

/** Factories by their keys, shared by every reader of the process: a harness's shapes recur in
 * every decoder and run, and a factory the JIT has optimized stays fast (a fresh compile would
 * start cold). Bounded: past the bound, new shapes compile per reader. */
const FACTORIES = new Map<string, Factory>();
const MAX_FACTORIES = 16384;

/** The object shapes one writer (a decoder's, a run's) has defined so far: one per writer, kept as
 * long as it (every tape of the writer must be read with it, in order). */
export class TapeShapes {
  readonly factories: Factory[] = [];

  /** The shape with these keys is the next id. */
  define(keys: string[]): void {
    const id = keys.join('\u0000');
    let factory = FACTORIES.get(id);
    if (factory === undefined) {
      // `{"k0": r.value(), "k1": r.value(), …}`: values are read in key order (a literal evaluates
      // its properties in order). JSON.stringify makes any key a valid string literal.
      const body = `return {${keys.map((k) => `${JSON.stringify(k)}:r.value()`).join(',')}};`;
      factory = new Function('r', body) as Factory;
      if (FACTORIES.size < MAX_FACTORIES) FACTORIES.set(id, factory);
    }
    this.factories.push(factory);
  }
}

/** The read position in one tape. */
class Reader {
  /** Next word. */
  i = 0;
  /** Next character of the text. */
  at = 0;
  // The last value of each envelope string in this batch (tape/mod.rs `Tape::last`).
  sessionId: string | undefined = undefined;
  timestamp: string | undefined = undefined;
  model: string | undefined = undefined;
  messageId: string | undefined = undefined;
  parentToolCallId: string | undefined = undefined;
  runId: string | undefined = undefined;

  /** The batch's values that stay JSON text, in reading order. */
  values: JsonValue[] = [];
  /** Next of them. */
  v = 0;
  readonly factories: Factory[];

  /** `end`: where the tape's words end (a reused array holds more than one tape's worth). */
  constructor(
    readonly text: string,
    readonly words: Uint32Array,
    shapes: TapeShapes,
    end: number = words.length,
  ) {
    // The trailer: new shapes (their keys at their own place in the text), the JSON values.
    const json = words[end - 1]!;
    const defined = words[end - 2]!;
    if (defined !== 0) {
      if (words[end - 3] !== shapes.factories.length) {
        // A tape of this writer was not read (a bug): its shapes are unknown here.
        throw new Error(
          `agentstream: internal error: a tape defines object shapes from #${words[end - 3]} but this reader knows ${shapes.factories.length}`,
        );
      }
      let i = words[end - 5]!;
      let at = words[end - 4]!;
      for (let d = 0; d < defined; d++) {
        const n = words[i++]!;
        const keys = new Array<string>(n);
        for (let k = 0; k < n; k++) {
          const from = at;
          at += words[i++]!;
          keys[k] = text.slice(from, at);
        }
        shapes.define(keys);
      }
    }
    this.factories = shapes.factories;
    if (json !== 0) this.values = JSON.parse(text.slice(text.length - json)) as JsonValue[];
  }

  word(): number {
    return this.words[this.i++]!;
  }

  str(): string {
    const from = this.at;
    this.at = from + this.words[this.i++]!;
    return this.text.slice(from, this.at);
  }

  /** A JSON value (tape/value.rs). */
  value(): JsonValue {
    switch (this.words[this.i++]) {
      case 0:
        return null;
      case 1:
        return false;
      case 2:
        return true;
      case 3:
        return this.f64();
      case 4:
        return this.str();
      case 5: {
        const n = this.words[this.i++]!;
        const out = new Array<JsonValue>(n);
        for (let k = 0; k < n; k++) out[k] = this.value();
        return out;
      }
      case 6:
        return this.factories[this.words[this.i++]!]!(this);
      case 7:
        return this.words[this.i++]!;
      case 8:
        return this.values[this.v++]!;
      default:
        throw new Error(`agentstream: unknown value tag ${this.words[this.i - 1]} in a tape`);
    }
  }

  u64(): number {
    const hi = this.words[this.i++]!;
    const lo = this.words[this.i++]!;
    // Exact below 2^53; above, the nearest double, as JSON.parse gives it.
    return hi * 4294967296 + lo;
  }

  f64(): number {
    bits.setUint32(0, this.words[this.i++]!);
    bits.setUint32(4, this.words[this.i++]!);
    return bits.getFloat64(0);
  }
}

/** The events of one tape `[text, words]` of the writer whose shapes are `shapes`; its words are
 * `words[0, end)`. A tape of no events (its first word) defines no shapes: nothing to read. */
export function readEvents(
  text: string,
  words: Uint32Array,
  shapes: TapeShapes,
  end: number = words.length,
): OutputEvent[] {
  if (words[0] === 0) return [];
  const r = new Reader(text, words, shapes, end);
  const n = r.word();
  const out: OutputEvent[] = new Array<OutputEvent>(n);
  for (let k = 0; k < n; k++) out[k] = readEvent(r);
  return out;
}

const CHANNELS = ['content', 'lifecycle', 'stdout', 'stderr'] as const;

/** The deliveries of one run's tape `[text, words]`: envelopes in their wire shape (`runId`,
 * `sequence`, `channel`, `event`, `coalesced`?) and hook events, in delivery order. */
export function readDeliveries(text: string, words: Uint32Array, shapes: TapeShapes): (Envelope | HookEvent)[] {
  const r = new Reader(text, words, shapes);
  const n = r.word();
  const out = new Array<Envelope | HookEvent>(n);
  for (let k = 0; k < n; k++) {
    const w = r.word();
    const kind = w & 7;
    if (kind === 4) {
      out[k] = r.value() as unknown as HookEvent;
      continue;
    }
    const runId = ((w >>> 4) & 3) === NEW ? (r.runId = r.str()) : r.runId;
    const sequence = r.u64();
    const event = kind === 0 ? (readEvent(r) as unknown) : kind === 1 ? r.value() : r.str();
    const env: Record<string, unknown> = { runId, sequence, channel: CHANNELS[kind], event };
    if (w & 8) env.coalesced = r.u64();
    out[k] = env as unknown as Envelope;
  }
  return out;
}

/** Build the event with its keys in the core's order: sessionId, update, timestamp, model,
 * messageId, parentToolCallId, extra. */
function readEvent(r: Reader): OutputEvent {
  const header = r.word();
  const ev: Record<string, unknown> = {};
  let code = header & 3;
  if (code !== 0) ev.sessionId = code === NEW ? (r.sessionId = r.str()) : r.sessionId;
  ev.update = update(r, (header >>> 11) & 7);
  code = (header >>> 2) & 3;
  if (code !== 0) ev.timestamp = code === NEW ? (r.timestamp = r.str()) : r.timestamp;
  code = (header >>> 4) & 3;
  if (code !== 0) ev.model = code === NEW ? (r.model = r.str()) : r.model;
  code = (header >>> 6) & 3;
  if (code !== 0) ev.messageId = code === NEW ? (r.messageId = r.str()) : r.messageId;
  code = (header >>> 8) & 3;
  if (code !== 0) ev.parentToolCallId = code === NEW ? (r.parentToolCallId = r.str()) : r.parentToolCallId;
  if (header & (1 << 10)) ev.extra = r.value();
  return ev as unknown as OutputEvent;
}

function update(r: Reader, kind: number): SessionUpdate {
  switch (kind) {
    case 0:
      return { sessionUpdate: 'agent_message_chunk', content: contentBlock(r) };
    case 1:
      return { sessionUpdate: 'agent_thought_chunk', content: contentBlock(r) };
    case 2:
      return { sessionUpdate: 'user_message_chunk', content: contentBlock(r) };
    case 3:
      return toolCall(r);
    case 4:
      return toolCallUpdate(r);
    case 5: {
      const n = r.word();
      const entries = new Array(n);
      for (let k = 0; k < n; k++) {
        const content = r.str();
        const w = r.word();
        entries[k] = { content, status: PLAN_STATUSES[w & 3], priority: PLAN_PRIORITIES[(w >>> 2) & 3] };
      }
      return { sessionUpdate: 'plan', entries };
    }
    case 6: {
      const message = r.str();
      return { sessionUpdate: 'error', message, fatal: r.word() === 1 };
    }
    case 7:
      return usage(r);
    default:
      throw new Error(`agentstream: unknown update kind ${kind} in a tape (${UPDATE_KINDS.length} known)`);
  }
}

function contentBlock(r: Reader): ContentBlock {
  if (r.word() === 0) return { type: 'text', text: r.str() };
  const data = r.str();
  const mimeType = r.str();
  return r.word() === 1 ? { type: 'image', data, mimeType, uri: r.str() } : { type: 'image', data, mimeType };
}

function toolCall(r: Reader): SessionUpdate {
  const flags = r.word();
  const u: Record<string, unknown> = { sessionUpdate: 'tool_call', toolCallId: r.str(), title: r.str() };
  if (flags & 1) u.toolName = r.str();
  u.kind = TOOL_KINDS[(flags >>> 8) & 15];
  u.status = TOOL_STATUSES[(flags >>> 12) & 3];
  if (flags & 2) u.rawInput = r.value();
  if (flags & 4) u.content = toolCallContents(r);
  if (flags & 8) u.locations = locations(r);
  return u as unknown as SessionUpdate;
}

function toolCallUpdate(r: Reader): SessionUpdate {
  const flags = r.word();
  const u: Record<string, unknown> = { sessionUpdate: 'tool_call_update', toolCallId: r.str() };
  if (flags & 1) u.status = TOOL_STATUSES[(flags >>> 8) & 3];
  if (flags & 2) u.title = r.str();
  if (flags & 4) u.content = toolCallContents(r);
  if (flags & 8) u.locations = locations(r);
  if (flags & 16) u.rawOutput = r.value();
  return u as unknown as SessionUpdate;
}

function toolCallContents(r: Reader): ToolCallContent[] {
  const n = r.word();
  const out = new Array<ToolCallContent>(n);
  for (let k = 0; k < n; k++) {
    if (r.word() === 0) {
      out[k] = { type: 'content', content: contentBlock(r) };
    } else {
      const path = r.str();
      const oldText = r.word() === 1 ? r.str() : null;
      out[k] = { type: 'diff', path, oldText, newText: r.str() } as ToolCallContent;
    }
  }
  return out;
}

function locations(r: Reader): ToolCallLocation[] {
  const n = r.word();
  const out = new Array<ToolCallLocation>(n);
  for (let k = 0; k < n; k++) {
    const hasLine = r.word() === 1;
    const path = r.str();
    out[k] = hasLine ? { path, line: r.u64() } : { path };
  }
  return out;
}

function usage(r: Reader): SessionUpdate {
  const flags = r.word();
  const counts: Record<string, unknown> = {};
  if (flags & 2) counts.promptTokens = r.u64();
  if (flags & 4) counts.completionTokens = r.u64();
  if (flags & 8) counts.cachedTokens = r.u64();
  if (flags & 16) counts.costUsd = flags & 32 ? r.f64() : null;
  if (flags & 64) counts.extra = r.value() as JsonObject;
  return { sessionUpdate: 'usage', scope: flags & 1 ? 'run' : 'call', usage: counts as TokenUsage };
}
