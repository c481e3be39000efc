// The tape (bindings/node/src/tape.rs → node/src/tape.ts) is how content events cross from the
// addon: it must give exactly the objects JSON.parse makes of the core's own JSON — the same
// values AND the same key order (JSON.stringify of an event is the core's text byte for byte) —
// for every golden case, whole and in small chunks (so batches start mid-run and envelope strings
// repeat across events), for parse(), and for text that is not ASCII (then the batch's text is
// not Latin-1 and every cut is counted in UTF-16 units).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, readdirSync } from 'node:fs';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';

import { Decoder, parse } from 'agentstream';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..', 'tests', 'golden');

function inputs() {
  const out = [];
  for (const agent of readdirSync(root, { withFileTypes: true })) {
    if (!agent.isDirectory()) continue;
    for (const file of readdirSync(join(root, agent.name)).sort()) {
      if (file.endsWith('.input.jsonl')) out.push({ agent: agent.name, file: join(root, agent.name, file) });
    }
  }
  return out;
}

/** The events of `bytes` fed in `size`-byte chunks, through the tape and as the core's JSON. */
function both(agent, bytes, size) {
  const tape = new Decoder(agent);
  const json = new Decoder(agent);
  const viaTape = [];
  const viaJson = [];
  for (let at = 0; at < bytes.length; at += size) {
    const chunk = bytes.subarray(at, at + size);
    viaTape.push(...tape.feed(chunk));
    viaJson.push(...JSON.parse(json.feedJson(chunk)));
  }
  viaTape.push(...tape.finish());
  viaJson.push(...JSON.parse(json.finishJson()));
  return { viaTape, viaJson };
}

function assertSame(viaTape, viaJson, what) {
  assert.equal(viaTape.length, viaJson.length, `${what}: event count`);
  for (let i = 0; i < viaJson.length; i++) {
    assert.deepStrictEqual(viaTape[i], viaJson[i], `${what}: event ${i}`);
    assert.equal(JSON.stringify(viaTape[i]), JSON.stringify(viaJson[i]), `${what}: event ${i} key order`);
  }
}

const all = inputs();

test('every golden input is read from the tape exactly as from the core JSON', () => {
  assert.ok(all.length > 0, `no golden inputs under ${root}`);
  let events = 0;
  for (const { agent, file } of all) {
    const bytes = readFileSync(file);
    for (const size of [bytes.length || 1, 97, 7]) {
      const { viaTape, viaJson } = both(agent, bytes, size);
      assertSame(viaTape, viaJson, `${file} in ${size}-byte chunks`);
      events += viaJson.length;
    }
    const whole = new Decoder(agent);
    assertSame(parse(agent, bytes), [...JSON.parse(whole.feedJson(bytes)), ...JSON.parse(whole.finishJson())], `${file} parse()`);
  }
  assert.ok(events > 1000, `only ${events} events compared`);
});

test('a batch too large for the decoder\'s tape array comes whole, and later batches still read right', () => {
  // The decoder keeps one array for its tapes' words (16 KiB at first) and grows it after a batch
  // that did not fit: every golden claude input many times over is one such batch, then the same
  // again fits the grown array, then small chunks reuse it.
  const lines = all.filter((i) => i.agent === 'claude').map((i) => readFileSync(i.file));
  const once = Buffer.concat(lines.map((b) => (b.length && b[b.length - 1] !== 10 ? Buffer.concat([b, Buffer.from('\n')]) : b)));
  const big = Buffer.concat(Array.from({ length: 40 }, () => once));
  const tape = new Decoder('claude');
  const json = new Decoder('claude');
  let events = 0;
  for (const [what, chunk] of [['first large batch', big], ['second large batch', big], ...[...Array(30).keys()].map((i) => [`small chunk ${i}`, once.subarray(i * 97, i * 97 + 97)])]) {
    const viaTape = tape.feed(chunk);
    const viaJson = JSON.parse(json.feedJson(chunk));
    assertSame(viaTape, viaJson, what);
    events += viaJson.length;
  }
  assert.ok(events > 4096, `only ${events} events: the large batches did not outgrow the array`);
});

test('every kind of update and field the goldens hold is covered', () => {
  const seen = new Set();
  const walk = (value, path) => {
    if (Array.isArray(value)) return value.forEach((v) => walk(v, `${path}[]`));
    if (value !== null && typeof value === 'object') {
      for (const [k, v] of Object.entries(value)) {
        // The harness's own JSON is parsed from its slice as a whole: its inside is not the tape's.
        if (k === 'rawInput' || k === 'rawOutput' || k === 'extra') seen.add(`${path}.${k}`);
        else walk(v, `${path}.${k}`);
      }
      return;
    }
    seen.add(`${path}=${typeof value}`);
  };
  for (const { agent, file } of all) {
    for (const e of new Decoder(agent).feed(readFileSync(file))) walk(e, e.update.sessionUpdate);
  }
  for (const want of [
    'agent_message_chunk.update.content.text=string',
    'agent_thought_chunk.update.content.text=string',
    'user_message_chunk.update.content.text=string',
    'tool_call.update.toolName=string',
    'tool_call.update.rawInput',
    'tool_call.update.locations[].line=number',
    'tool_call.update.content[].oldText=object', // null
    'tool_call.update.content[].oldText=string',
    'tool_call.update.content[].newText=string',
    'tool_call.update.content[].content.type=string',
    'tool_call_update.update.rawOutput',
    'plan.update.entries[].priority=string',
    'error.update.fatal=boolean',
    'usage.update.usage.costUsd=number',
    'usage.update.usage.extra',
    'tool_call.parentToolCallId=string',
    'agent_message_chunk.extra',
  ]) {
    assert.ok([...seen].some((s) => s.startsWith(want)), `no golden event has ${want}`);
  }
  for (const field of ['.mimeType=string', '.data=string', '.uri=string']) {
    assert.ok([...seen].some((s) => s.endsWith(field)), `no golden image has ${field}`);
  }
});

test('text that is not ASCII is cut in UTF-16 units', () => {
  const text = 'héllo ✓ 𝄞 done — 日本語 🎉';
  const lines = [
    '{"type":"system","subtype":"init","session_id":"séss-1","model":"clâude"}',
    JSON.stringify({ type: 'assistant', message: { id: 'msg_1', model: 'clâude', role: 'assistant', content: [{ type: 'text', text }] }, session_id: 'séss-1' }),
    JSON.stringify({ type: 'assistant', message: { id: 'msg_2', model: 'clâude', role: 'assistant', content: [{ type: 'tool_use', id: 'tu_𝄞', name: 'Bash', input: { command: `echo ${text}` } }] }, session_id: 'séss-1' }),
    JSON.stringify({ type: 'user', message: { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'tu_𝄞', content: text }] }, session_id: 'séss-1' }),
    '',
  ].join('\n');
  const bytes = Buffer.from(lines, 'utf8');
  for (const size of [bytes.length, 5]) {
    const { viaTape, viaJson } = both('claude', bytes, size);
    assertSame(viaTape, viaJson, `${size}-byte chunks`);
  }
  const events = new Decoder('claude').feed(lines);
  assert.equal(events[0].update.content.text, text);
  assert.equal(events[0].sessionId, 'séss-1');
});

test('a real run read from tapes gives the wire shapes: every channel, hook events, key order', async () => {
  const { fakeEvolve, golden } = await import('./fake.mjs');
  const { replay } = await import('agentstream');
  for (const [agent, name] of [['claude', 's2-bash'], ['codex', 's2-bash'], ['gemini', 's2-bash']]) {
    const evolve = fakeEvolve(agent, name);
    const hooks = [];
    const envelopes = [];
    for await (const envelope of evolve.stream({ prompt: 'tape', onEvent: (h) => hooks.push(h) })) envelopes.push(envelope);
    // The same recording through the sans-IO pipeline, serialized as JSON by the core.
    const want = replay(agent, readFileSync(`${golden(agent, name)}.input.jsonl`));
    const content = (list) => list.filter((e) => e.channel === 'content');
    assertSame(content(envelopes).map((e) => e.event), content(want.items).map((e) => e.event), `${agent}/${name} run`);
    const stdout = envelopes.filter((e) => e.channel === 'stdout').map((e) => e.event).join('');
    assert.equal(stdout, readFileSync(`${golden(agent, name)}.input.jsonl`, 'utf8'), `${agent}/${name} stdout`);
    envelopes.forEach((e, i) => {
      assert.equal(e.sequence, i, `${agent}/${name}: gapless sequence`);
      assert.deepEqual(Object.keys(e), ['runId', 'sequence', 'channel', 'event'], `${agent}/${name}: envelope keys`);
      assert.equal(e.runId, envelopes[0].runId);
    });
    const lifecycle = envelopes.filter((e) => e.channel === 'lifecycle');
    const wantLifecycle = want.items.filter((e) => e.channel === 'lifecycle');
    assert.deepEqual(Object.keys(lifecycle.at(-1).event), Object.keys(wantLifecycle.at(-1).event), `${agent}/${name}: lifecycle keys`);
    assert.deepEqual(hooks.map((h) => h.type), want.hooks.map((h) => h.type), `${agent}/${name}: hooks`);
    hooks.forEach((h, i) => assert.deepEqual(Object.keys(h), Object.keys(want.hooks[i]), `${agent}/${name}: hook ${i} keys`));
  }
});
