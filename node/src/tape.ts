/**
 * Reads the addon's tapes of content events (`bindings/node/src/tape.rs` describes the format
 * and why it exists) into exactly the objects `JSON.parse` makes of the events' JSON: the same
 * keys in the same order, absent optional keys left out, the same values.
 *
 * Every string is one `slice` of the batch's text (a cursor walks it in order); objects are
 * built by literals of fixed shapes; only the harness's own JSON (`rawInput`, `rawOutput`,
 * `extra`) is `JSON.parse`d: every value of a batch in one call, from the end of its text. `node/test/tape.test.mjs` compares the result with
 * `JSON.parse` of the core's JSON on every golden case.
 *
 * @internal
 */

import type { ContentBlock, JsonObject, JsonValue, OutputEvent, SessionUpdate, TokenUsage, ToolCallContent, ToolCallLocation } from './types';

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

/** Envelope string codes (tape.rs `ABSENT`, `SAME`, `NEW`). */
const SAME = 1;
const NEW = 2;

// f64 bits → number, big-endian words so the result does not depend on the platform's order.
const bits = new DataView(new ArrayBuffer(8));

/** The read position in one tape. */
class Reader {
  /** Next word. */
  i = 0;
  /** Next character of the text. */
  at = 0;
  // The last value of each envelope string in this batch (tape.rs `Tape::last`).
  sessionId: string | undefined = undefined;
  timestamp: string | undefined = undefined;
  model: string | undefined = undefined;
  messageId: string | undefined = undefined;
  parentToolCallId: string | undefined = undefined;

  /** The batch's JSON values, in reading order (tape.rs `Tape::finish`). */
  values: JsonValue[] = [];
  /** Next value. */
  v = 0;

  constructor(
    readonly text: string,
    readonly words: Uint32Array,
  ) {
    const json = words[words.length - 1]!;
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

  json(): JsonValue {
    return this.values[this.v++]!;
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

/** The events of one tape `[text, words]`. */
export function readEvents(text: string, words: Uint32Array): OutputEvent[] {
  const r = new Reader(text, words);
  const n = r.word();
  const out: OutputEvent[] = new Array<OutputEvent>(n);
  for (let k = 0; k < n; k++) out[k] = event(r);
  return out;
}

/** Build the event with its keys in the core's order: sessionId, update, timestamp, model,
 * messageId, parentToolCallId, extra. */
function event(r: Reader): OutputEvent {
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
  if (header & (1 << 10)) ev.extra = r.json();
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
  if (flags & 2) u.rawInput = r.json();
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
  if (flags & 16) u.rawOutput = r.json();
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
  if (flags & 64) counts.extra = r.json() as JsonObject;
  return { sessionUpdate: 'usage', scope: flags & 1 ? 'run' : 'call', usage: counts as TokenUsage };
}
