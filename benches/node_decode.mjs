#!/usr/bin/env node
// Decoder throughput from Node: events/s and MB/s delivered to a JavaScript callback, on the
// mixed corpus of every golden `s*` trace (real captures of all seven harnesses), side by side in
// one run with a plain-JavaScript `JSON.parse` normalizer of the same corpus.
//
//   node benches/node_decode.mjs [--seconds 0.3] [--rounds 7] [--chunk 1024]
//
// Variants (interleaved: each round gives every variant a --seconds slice of passes over the
// whole corpus; the best round's CPU time per pass is reported, so a busy shared machine
// disturbs the comparison less):
//   agentstream Decoder            the public API: one JSON array per feed() from Rust, JSON.parse in JS
//   native objects (napi)          the same decoder, events built as JS objects through napi
//                                  (kept only for this comparison: see toolchain.md, "Node")
//   plain JS JSON.parse normalizer per line JSON.parse + a hand-written normalization to OutputEvent
//                                  shapes (a typical pure-JS implementation; less complete than the core)
// Each runs on whole traces (one feed per trace, as a pipe read delivers them) and in --chunk
// byte chunks (the JS baseline then frames lines itself with a StringDecoder). Two more rows
// measure forwarding: the callback gets the events as JSON text (Decoder.feedJson, versus the
// plain-JS normalizer followed by JSON.stringify).
import { readFileSync, readdirSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { StringDecoder } from 'node:string_decoder';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const repo = join(here, '..');
const require = createRequire(join(repo, 'node', 'package.json'));
const { Decoder, VERSION } = require('agentstream');
const native = require('./native/index.js');

const args = process.argv.slice(2);
const opt = (name, dflt) => {
  const i = args.indexOf(`--${name}`);
  return i >= 0 ? Number(args[i + 1]) : dflt;
};
const SECONDS = opt('seconds', 0.3);
const ROUNDS = opt('rounds', 7);
const CHUNK = opt('chunk', 1024);

// ---------------------------------------------------------------------------------------------
// Corpus

const goldenRoot = join(repo, 'tests', 'golden');
const corpus = [];
for (const agent of readdirSync(goldenRoot, { withFileTypes: true })) {
  if (!agent.isDirectory()) continue;
  for (const file of readdirSync(join(goldenRoot, agent.name)).sort()) {
    if (/^s.*\.input\.jsonl$/.test(file)) {
      const bytes = readFileSync(join(goldenRoot, agent.name, file));
      const chunks = [];
      for (let i = 0; i < bytes.length; i += CHUNK) chunks.push(bytes.subarray(i, i + CHUNK));
      corpus.push({ agent: agent.name, name: file, bytes, chunks });
    }
  }
}
const corpusBytes = corpus.reduce((n, t) => n + t.bytes.length, 0);
if (corpus.length === 0) throw new Error(`no s* traces under ${goldenRoot}`);

// ---------------------------------------------------------------------------------------------
// The plain-JavaScript baseline: JSON.parse per line, then a normalization to OutputEvent shapes.

const KINDS = {
  bash: 'execute', shell: 'execute', run_shell_command: 'execute', command_execution: 'execute', execute: 'execute',
  read: 'read', read_file: 'read', notebookread: 'read', readfile: 'read',
  edit: 'edit', write: 'edit', multiedit: 'edit', replace: 'edit', write_file: 'edit', create: 'edit', applypatch: 'edit',
  file_change: 'edit', notebookedit: 'edit', strreplacefile: 'edit', writefile: 'edit',
  glob: 'search', grep: 'search', ls: 'search', list_directory: 'search', search_file_content: 'search',
  webfetch: 'fetch', websearch: 'fetch', web_search: 'fetch', fetchurl: 'fetch', google_web_search: 'fetch',
  task: 'think', agent: 'think', exitplanmode: 'switch_mode', exitspecmode: 'switch_mode',
};
const kindOf = (name) => KINDS[String(name).toLowerCase()] ?? 'other';
const iso = (t) => (typeof t === 'number' ? new Date(t).toISOString() : t);

function title(name, input) {
  const kind = kindOf(name);
  if (kind === 'execute' && input && typeof input.command === 'string') return '`' + input.command + '`';
  const path = input && (input.file_path ?? input.path ?? input.absolute_path ?? input.filePath);
  if (typeof path === 'string') return `${name} ${path}`;
  return String(name);
}

const text = (t) => ({ type: 'content', content: { type: 'text', text: t } });
const textOf = (c) =>
  typeof c === 'string' ? c : Array.isArray(c) ? c.map((b) => (typeof b === 'string' ? b : b?.text ?? '')).join('') : '';

function claudeUsage(u) {
  const cacheRead = u.cache_read_input_tokens ?? 0;
  const out = { promptTokens: (u.input_tokens ?? 0) + cacheRead + (u.cache_creation_input_tokens ?? 0), cachedTokens: cacheRead };
  if (u.output_tokens !== undefined) out.completionTokens = u.output_tokens;
  const extra = {};
  for (const k of Object.keys(u)) if (!['input_tokens', 'output_tokens', 'cache_read_input_tokens'].includes(k)) extra[k] = u[k];
  out.extra = extra;
  return out;
}

/** One normalizer per run: (line object) → events, with the session id etc. stamped. */
function makeNormalizer(agent) {
  const st = { sessionId: undefined, model: undefined, calls: new Map() };
  const ev = (update, line, more) => {
    const e = { update };
    if (st.sessionId !== undefined) e.sessionId = st.sessionId;
    const ts = line.timestamp;
    if (ts !== undefined) e.timestamp = iso(ts);
    if (st.model !== undefined) e.model = st.model;
    return more ? Object.assign(e, more) : e;
  };
  const call = (id, name, input, status, line, out, more) => {
    st.calls.set(id, name);
    out.push(ev({ sessionUpdate: 'tool_call', toolCallId: id, title: title(name, input), toolName: name, kind: kindOf(name), status, rawInput: input ?? {} }, line, more));
  };
  const result = (id, ok, content, raw, line, out, more) => {
    const u = { sessionUpdate: 'tool_call_update', toolCallId: id, status: ok ? 'completed' : 'failed', content: [text(content)] };
    if (raw !== undefined) u.rawOutput = raw;
    out.push(ev(u, line, more));
  };
  const byAgent = {
    claude(l, out) {
      if (l.session_id) st.sessionId = l.session_id;
      if (l.type === 'system' && l.subtype === 'init') return;
      if (l.type === 'assistant' && l.message) {
        const m = l.message;
        const more = { model: m.model, messageId: m.id };
        for (const b of m.content ?? []) {
          if (b.type === 'text') out.push(ev({ sessionUpdate: 'agent_message_chunk', content: { type: 'text', text: b.text } }, l, more));
          else if (b.type === 'thinking') out.push(ev({ sessionUpdate: 'agent_thought_chunk', content: { type: 'text', text: b.thinking } }, l, more));
          else if (b.type === 'tool_use') {
            if (b.name === 'TodoWrite') {
              out.push(ev({ sessionUpdate: 'plan', entries: (b.input?.todos ?? []).map((t) => ({ content: t.content, status: t.status, priority: t.priority ?? 'medium' })) }, l, more));
            } else call(b.id, b.name, b.input, 'pending', l, out, more);
          }
        }
        if (m.usage) out.push(ev({ sessionUpdate: 'usage', scope: 'call', usage: claudeUsage(m.usage) }, l, more));
      } else if (l.type === 'user' && l.message) {
        for (const b of Array.isArray(l.message.content) ? l.message.content : []) {
          if (b.type === 'tool_result') result(b.tool_use_id, !b.is_error, textOf(b.content), l.tool_use_result, l, out);
        }
      } else if (l.type === 'result') {
        if (l.is_error) out.push(ev({ sessionUpdate: 'error', message: String(l.result ?? l.subtype), fatal: true }, l));
        if (l.usage) {
          const usage = claudeUsage(l.usage);
          if (typeof l.total_cost_usd === 'number') usage.costUsd = l.total_cost_usd;
          out.push(ev({ sessionUpdate: 'usage', scope: 'run', usage }, l));
        }
      }
    },
    codex(l, out) {
      if (l.type === 'thread.started') st.sessionId = l.thread_id;
      else if (l.type === 'item.started' || l.type === 'item.completed') {
        const it = l.item ?? {};
        const done = l.type === 'item.completed';
        if (it.type === 'agent_message' && done) out.push(ev({ sessionUpdate: 'agent_message_chunk', content: { type: 'text', text: it.text } }, l));
        else if (it.type === 'reasoning' && done) out.push(ev({ sessionUpdate: 'agent_thought_chunk', content: { type: 'text', text: it.text } }, l));
        else if (it.type === 'command_execution') {
          const cmd = String(it.command).replace(/^\/bin\/bash -lc '(.*)'$/, '$1');
          if (!st.calls.has(it.id)) call(it.id, 'command_execution', { command: it.command }, 'in_progress', l, out);
          if (done) result(it.id, it.exit_code === 0, it.aggregated_output ?? '', { aggregated_output: it.aggregated_output, command: it.command, exit_code: it.exit_code, status: it.status }, l, out);
          void cmd;
        } else if (it.type === 'file_change') {
          if (!st.calls.has(it.id)) call(it.id, 'file_change', { changes: it.changes }, 'in_progress', l, out);
          if (done) result(it.id, it.status === 'completed', '', undefined, l, out);
        } else if (it.type === 'todo_list') {
          out.push(ev({ sessionUpdate: 'plan', entries: (it.items ?? []).map((t) => ({ content: t.text, status: t.completed ? 'completed' : 'pending', priority: 'medium' })) }, l));
        }
      } else if (l.type === 'turn.completed' && l.usage) {
        const u = l.usage;
        out.push(ev({ sessionUpdate: 'usage', scope: 'run', usage: { promptTokens: u.input_tokens, completionTokens: u.output_tokens, cachedTokens: u.cached_input_tokens, extra: { cache_write_input_tokens: u.cache_write_input_tokens, reasoning_output_tokens: u.reasoning_output_tokens } } }, l));
      } else if (l.type === 'error' || l.type === 'turn.failed') {
        out.push(ev({ sessionUpdate: 'error', message: String(l.message ?? l.error?.message), fatal: l.type === 'turn.failed' }, l));
      }
    },
    gemini(l, out) {
      if (l.type === 'init') {
        st.sessionId = l.session_id;
        st.model = l.model;
      } else if (l.type === 'message') {
        const kind = l.role === 'user' ? 'user_message_chunk' : 'agent_message_chunk';
        out.push(ev({ sessionUpdate: kind, content: { type: 'text', text: textOf(l.content) } }, l));
      } else if (l.type === 'tool_use') call(l.tool_id, l.tool_name, l.parameters, 'pending', l, out);
      else if (l.type === 'tool_result') result(l.tool_id, l.status === 'success', l.output ?? l.error?.message ?? '', { output: l.output }, l, out);
      else if (l.type === 'result') {
        const s = l.stats ?? {};
        if (l.status !== 'success') out.push(ev({ sessionUpdate: 'error', message: String(l.error?.message), fatal: true }, l));
        const extra = { ...s };
        delete extra.input_tokens;
        delete extra.output_tokens;
        out.push(ev({ sessionUpdate: 'usage', scope: 'run', usage: { promptTokens: s.input_tokens, completionTokens: s.output_tokens, cachedTokens: s.cached, extra } }, l));
      } else if (l.type === 'error') out.push(ev({ sessionUpdate: 'error', message: String(l.message), fatal: l.severity === 'error' }, l));
    },
    kimi(l, out) {
      if (l.role === 'assistant') {
        const t = textOf(l.content);
        if (t) out.push(ev({ sessionUpdate: 'agent_message_chunk', content: { type: 'text', text: t } }, l));
        for (const c of l.tool_calls ?? []) {
          let input;
          try {
            input = JSON.parse(c.function?.arguments ?? '{}');
          } catch {
            input = {};
          }
          call(c.id, c.function?.name, input, 'pending', l, out);
        }
      } else if (l.role === 'tool') {
        const u = { sessionUpdate: 'tool_call_update', toolCallId: l.tool_call_id, status: 'completed', content: (Array.isArray(l.content) ? l.content : [l.content]).map((b) => text(typeof b === 'string' ? b : b.text)) };
        out.push(ev(u, l));
      }
    },
    opencode(l, out) {
      if (l.sessionID) st.sessionId = l.sessionID;
      const p = l.part ?? {};
      const more = p.messageID ? { messageId: p.messageID } : undefined;
      if (l.type === 'text') out.push(ev({ sessionUpdate: 'agent_message_chunk', content: { type: 'text', text: p.text } }, l, more));
      else if (l.type === 'reasoning') out.push(ev({ sessionUpdate: 'agent_thought_chunk', content: { type: 'text', text: p.text } }, l, more));
      else if (l.type === 'tool_use') {
        const s = p.state ?? {};
        if (!st.calls.has(p.callID)) call(p.callID, p.tool, s.input, s.status === 'pending' ? 'pending' : 'in_progress', l, out, more);
        if (s.status === 'completed' || s.status === 'error') result(p.callID, s.status === 'completed', s.output ?? s.error ?? '', { metadata: s.metadata, output: s.output, time: s.time }, l, out, more);
      } else if (l.type === 'step_finish' && p.tokens) {
        const t = p.tokens;
        const cache = t.cache ?? {};
        out.push(ev({ sessionUpdate: 'usage', scope: 'call', usage: { promptTokens: (t.input ?? 0) + (cache.read ?? 0) + (cache.write ?? 0), completionTokens: (t.output ?? 0) + (t.reasoning ?? 0), cachedTokens: cache.read, costUsd: p.cost, extra: t } }, l, more));
      } else if (l.type === 'error') out.push(ev({ sessionUpdate: 'error', message: String(l.error?.data?.message ?? l.error?.name), fatal: true }, l));
    },
    droid(l, out) {
      if (l.session_id) st.sessionId = l.session_id;
      if (l.type === 'system' && l.subtype === 'init') st.model = l.model;
      else if (l.type === 'message' && l.role === 'assistant') out.push(ev({ sessionUpdate: 'agent_message_chunk', content: { type: 'text', text: l.text } }, l, { messageId: l.id }));
      else if (l.type === 'tool_call') call(l.id, l.toolName, l.parameters, 'pending', l, out, { messageId: l.messageId });
      else if (l.type === 'tool_result') result(l.id, !l.isError, textOf(l.value), undefined, l, out, { messageId: l.messageId });
      else if (l.type === 'completion' && l.usage) {
        const u = l.usage;
        out.push(ev({ sessionUpdate: 'usage', scope: 'run', usage: { promptTokens: (u.input_tokens ?? 0) + (u.cache_read_input_tokens ?? 0) + (u.cache_creation_input_tokens ?? 0), completionTokens: u.output_tokens, cachedTokens: u.cache_read_input_tokens, extra: { durationMs: l.durationMs, ...u } } }, l));
      } else if (l.type === 'error') out.push(ev({ sessionUpdate: 'error', message: String(l.message), fatal: true }, l));
    },
  };
  byAgent.qwen = byAgent.claude;
  const decode = byAgent[agent];
  return (line, out) => {
    if (line.trim() === '') return;
    let obj;
    try {
      obj = JSON.parse(line);
    } catch {
      return; // not JSON: no event (the raw line still goes to stdout)
    }
    if (obj === null || typeof obj !== 'object' || Array.isArray(obj)) return;
    decode(obj, out);
  };
}

function baselineWhole(t, cb) {
  const norm = makeNormalizer(t.agent);
  const out = [];
  for (const line of t.bytes.toString('utf8').split('\n')) norm(line, out);
  for (const e of out) cb(e);
}

function baselineChunked(t, cb) {
  const norm = makeNormalizer(t.agent);
  const dec = new StringDecoder('utf8');
  let pending = '';
  const out = [];
  for (const c of t.chunks) {
    const s = pending + dec.write(c);
    const lines = s.split('\n');
    pending = lines.pop();
    for (const line of lines) norm(line, out);
    for (const e of out) cb(e);
    out.length = 0;
  }
  norm(pending + dec.end(), out);
  for (const e of out) cb(e);
}

// ---------------------------------------------------------------------------------------------
// The agentstream variants

function decoderWhole(t, cb) {
  const d = new Decoder(t.agent);
  for (const e of d.feed(t.bytes)) cb(e);
  for (const e of d.finish()) cb(e);
}

function decoderChunked(t, cb) {
  const d = new Decoder(t.agent);
  for (const c of t.chunks) for (const e of d.feed(c)) cb(e);
  for (const e of d.finish()) cb(e);
}

// Forwarding (a log, a socket, another process): the callback gets JSON text, not objects.
function decoderForwardWhole(t, cb) {
  const d = new Decoder(t.agent);
  cb(d.feedJson(t.bytes));
  cb(d.finishJson());
}

function baselineForwardWhole(t, cb) {
  const norm = makeNormalizer(t.agent);
  const out = [];
  for (const line of t.bytes.toString('utf8').split('\n')) norm(line, out);
  cb(JSON.stringify(out));
}

function objectsWhole(t, cb) {
  const d = new native.NativeDecoder(t.agent);
  for (const e of d.feedObjects(t.bytes)) cb(e);
  for (const e of JSON.parse(d.finish())) cb(e);
}

function objectsChunked(t, cb) {
  const d = new native.NativeDecoder(t.agent);
  for (const c of t.chunks) for (const e of d.feedObjects(c)) cb(e);
  for (const e of JSON.parse(d.finish())) cb(e);
}

// ---------------------------------------------------------------------------------------------
// Measurement

let sink = 0;
/** The callback every variant delivers to: reads the discriminator, as a UI would (or, for the
 *  forwarding variants, takes the JSON text's length, as a writer would). */
function cb(e) {
  sink += typeof e === 'string' ? e.length : e.update.sessionUpdate.length;
}

/** Events per pass of a variant (the callback counts; forwarding variants parse to count). */
function eventsPerPass(run) {
  let events = 0;
  const count = (e) => {
    events += typeof e === 'string' ? JSON.parse(e).length : 1;
    cb(e);
  };
  for (const t of corpus) run(t, count);
  return events;
}

/** CPU nanoseconds of this process (user + system): unlike wall time, not inflated while other
 *  processes on this shared machine hold the CPU. */
function cpuNs() {
  const u = process.cpuUsage();
  return (u.user + u.system) * 1000;
}

/** One slice: passes over the corpus for about `seconds` of wall time; CPU ns per pass. */
function slice(run, seconds) {
  const deadline = process.hrtime.bigint() + BigInt(Math.round(seconds * 1e9));
  const start = cpuNs();
  let passes = 0;
  do {
    for (const t of corpus) run(t, cb);
    passes++;
  } while (process.hrtime.bigint() < deadline);
  return (cpuNs() - start) / passes;
}

/** Interleaved: every round gives each variant one slice, so load changes hit all alike. */
function measureAll(variants) {
  const best = variants.map(() => Infinity);
  variants.forEach(([, , run]) => slice(run, 0.2)); // warm up
  for (let r = 0; r < ROUNDS; r++) {
    variants.forEach(([, , run], i) => {
      best[i] = Math.min(best[i], slice(run, SECONDS));
    });
  }
  return variants.map(([name, mode, run], i) => {
    const perPass = eventsPerPass(run);
    const seconds = best[i] / 1e9;
    return { name, mode, perPass, eventsPerSec: perPass / seconds, mbPerSec: corpusBytes / 1e6 / seconds, nsPerEvent: best[i] / perPass };
  });
}

const variants = [
  ['agentstream Decoder (JSON array + JSON.parse)', 'whole', decoderWhole],
  ['native objects via napi (not used)', 'whole', objectsWhole],
  ['plain JS JSON.parse normalizer', 'whole', baselineWhole],
  ['agentstream Decoder (JSON array + JSON.parse)', `${CHUNK} B chunks`, decoderChunked],
  ['native objects via napi (not used)', `${CHUNK} B chunks`, objectsChunked],
  ['plain JS JSON.parse normalizer', `${CHUNK} B chunks`, baselineChunked],
  ['agentstream Decoder.feedJson (JSON text)', 'forwarding', decoderForwardWhole],
  ['plain JS normalizer + JSON.stringify', 'forwarding', baselineForwardWhole],
];

console.log(`agentstream ${VERSION} on Node ${process.version}: ${corpus.length} traces (${[...new Set(corpus.map((t) => t.agent))].join(', ')}), ${(corpusBytes / 1024).toFixed(1)} KiB per pass`);
console.log(`CPU time per pass, best of ${ROUNDS} interleaved rounds of ${SECONDS}s per variant\n`);
const rows = measureAll(variants);

const pad = (s, n) => String(s).padEnd(n);
const lpad = (s, n) => String(s).padStart(n);
console.log(`${pad('variant', 48)}${pad('input', 16)}${lpad('events/pass', 12)}${lpad('events/s', 12)}${lpad('MB/s', 9)}${lpad('ns/event', 10)}`);
for (const r of rows) {
  console.log(`${pad(r.name, 48)}${pad(r.mode, 16)}${lpad(r.perPass, 12)}${lpad(Math.round(r.eventsPerSec).toLocaleString('en'), 12)}${lpad(r.mbPerSec.toFixed(1), 9)}${lpad(Math.round(r.nsPerEvent), 10)}`);
}
console.log('');
for (const mode of ['whole', `${CHUNK} B chunks`]) {
  const [dec, obj, base] = rows.filter((r) => r.mode === mode);
  console.log(`${pad(mode + ':', 16)} Decoder / plain JS = ${(dec.mbPerSec / base.mbPerSec).toFixed(2)}x MB/s (target >= 1.5x); JSON path / napi objects = ${(dec.mbPerSec / obj.mbPerSec).toFixed(2)}x`);
}
const [fwd, fwdBase] = rows.filter((r) => r.mode === 'forwarding');
console.log(`${pad('forwarding:', 16)} Decoder.feedJson / plain JS + JSON.stringify = ${(fwd.mbPerSec / fwdBase.mbPerSec).toFixed(2)}x MB/s`);
if (sink === 42) console.log(''); // keep the callback's work observable
