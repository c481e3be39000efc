// Golden content replay: every tests/golden/<agent>/<case>.input.jsonl through the Node binding's
// Decoder — whole, byte by byte, and in seeded random chunks, as Buffer and as text, and through
// parse() — must give exactly <case>.expected.jsonl (compared as parsed JSON); and replay()
// through the whole pipeline must give <case>.hooks.jsonl (the core's canonical hook events, in
// the TypeScript shape) and a well-formed run stream. Cases are discovered by globbing, so new
// ones are picked up without touching this file.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, readdirSync, existsSync } from 'node:fs';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';

import { Decoder, parse, replay, hookFromCanonical, AGENTS } from 'agentstream';

// A canonical hook line (snake_case, `details` apart) in the TypeScript shape, written here from
// the documented rule so that the addon's own conversion is checked, not trusted: one flat object,
// the envelope keys first, every key of ours camelCase (nested objects too, arrays left alone),
// the harness's records (`arguments`, `raw_output`, `output`, `result`, `extra`, `usage`) verbatim.
const HARNESS_RECORDS = new Set(['arguments', 'raw_output', 'output', 'result', 'extra', 'usage']);
const camelCase = (key) => key.replace(/_(.)/g, (_, c) => c.toUpperCase());
function camelKeys(value) {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return value;
  return Object.fromEntries(
    Object.entries(value).map(([k, v]) => [camelCase(k), HARNESS_RECORDS.has(k) ? v : camelKeys(v)]),
  );
}
function typeScriptHook(line) {
  const h = JSON.parse(line);
  const flat = { type: h.type, runId: h.run_id, agentId: h.agent_id, timestamp: h.timestamp, status: h.status, sequence: h.sequence };
  for (const [k, v] of Object.entries(camelKeys(h.details ?? {}))) if (!(k in flat)) flat[k] = v;
  return flat;
}

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..', 'tests', 'golden');

/** Every (agent, case) with an input file, sorted. */
function cases() {
  const out = [];
  for (const agent of readdirSync(root, { withFileTypes: true })) {
    if (!agent.isDirectory()) continue;
    for (const file of readdirSync(join(root, agent.name)).sort()) {
      const m = /^(.*)\.input\.jsonl$/.exec(file);
      if (m) out.push({ agent: agent.name, name: m[1], input: join(root, agent.name, file) });
    }
  }
  return out.sort((a, b) => (a.agent + '/' + a.name).localeCompare(b.agent + '/' + b.name));
}

function expected(c) {
  const text = readFileSync(join(root, c.agent, `${c.name}.expected.jsonl`), 'utf8');
  return text.split('\n').filter((l) => l.trim() !== '').map((l) => JSON.parse(l));
}

/** xorshift64* like the Rust golden test: reproducible chunkings without a dependency. */
function rng(seed) {
  let s = BigInt.asUintN(64, BigInt(seed) * 0x9e3779b97f4a7c15n);
  return () => {
    s ^= s >> 12n;
    s ^= BigInt.asUintN(64, s << 25n);
    s ^= s >> 27n;
    return BigInt.asUintN(64, s * 0x2545f4914f6cdd1dn);
  };
}

function decodeChunked(agent, bytes, nextSize) {
  const d = new Decoder(agent);
  const out = [];
  let at = 0;
  while (at < bytes.length) {
    const n = Math.min(Math.max(nextSize(), 1), bytes.length - at);
    for (const e of d.feed(bytes.subarray(at, at + n))) out.push(e);
    at += n;
  }
  for (const e of d.finish()) out.push(e);
  assert.equal(d.hasPartialLine, false);
  assert.equal(d.stats.bytes, bytes.length);
  return out;
}

const all = cases();

test('golden cases are discovered for every agent', () => {
  assert.ok(all.length > 0, `no golden cases under ${root}`);
  const agents = new Set(all.map((c) => c.agent));
  for (const a of agents) assert.ok(AGENTS.includes(a), `golden folder ${a} is not an agent name`);
  for (const c of all) assert.ok(existsSync(join(root, c.agent, `${c.name}.expected.jsonl`)), `${c.agent}/${c.name}: no expected file`);
});

for (const c of all) {
  test(`golden ${c.agent}/${c.name}`, () => {
    const bytes = readFileSync(c.input);
    const want = expected(c);

    assert.deepStrictEqual(decodeChunked(c.agent, bytes, () => Infinity), want, 'whole Buffer');
    assert.deepStrictEqual(decodeChunked(c.agent, bytes, () => 1), want, 'byte by byte');
    for (let seed = 1; seed <= 5; seed++) {
      const next = rng(seed);
      assert.deepStrictEqual(decodeChunked(c.agent, bytes, () => Number(next() % 97n) + 1), want, `random chunks, seed ${seed}`);
    }

    // Text input: whole, and split at code points (a string cannot hold half a UTF-8 character).
    const text = bytes.toString('utf8');
    if (Buffer.from(text, 'utf8').equals(bytes)) {
      const d = new Decoder(c.agent);
      const got = [...d.feed(text), ...d.finish()];
      assert.deepStrictEqual(got, want, 'whole string');
      const points = Array.from(text);
      const next = rng(42);
      const d2 = new Decoder(c.agent);
      const got2 = [];
      for (let i = 0; i < points.length; ) {
        const n = Number(next() % 61n) + 1;
        got2.push(...d2.feed(points.slice(i, i + n).join('')));
        i += n;
      }
      got2.push(...d2.finish());
      assert.deepStrictEqual(got2, want, 'string chunks');
      assert.deepStrictEqual(parse(c.agent, text), want, 'parse(text)');
    }

    assert.deepStrictEqual(parse(c.agent, bytes), want, 'parse(Buffer)');
    assert.deepStrictEqual(parse(c.agent, new Uint8Array(bytes)), want, 'parse(Uint8Array)');
  });

  const hooksPath = join(root, c.agent, `${c.name}.hooks.jsonl`);
  {
    test(`golden hooks ${c.agent}/${c.name}`, () => {
      assert.ok(existsSync(hooksPath), `${hooksPath} is missing: every case has its hooks`);
      const r = replay(c.agent, readFileSync(c.input), { runId: 'golden' });
      const lines = readFileSync(hooksPath, 'utf8').split('\n').filter((l) => l.trim() !== '');
      // Built here, not by the addon's conversion (which the replay itself uses).
      assert.deepStrictEqual(r.hooks, lines.map(typeScriptHook));
      assert.deepStrictEqual(lines.map((l) => hookFromCanonical(l)), r.hooks, 'hookFromCanonical');
      // The run stream: gapless from 0, run_start first, exactly one terminal (last), content
      // events exactly the expected ones, in order.
      r.items.forEach((env, i) => {
        assert.equal(env.sequence, i);
        assert.equal(env.runId, 'golden');
        assert.equal(env.coalesced, undefined);
      });
      assert.equal(r.items[0].channel, 'lifecycle');
      assert.equal(r.items[0].event.reason, 'run_start');
      assert.equal(r.items[0].event.sandboxId, null, 'lifecycle events are camelCase');
      const terminal = r.items[r.items.length - 1];
      assert.equal(terminal.channel, 'lifecycle');
      assert.match(terminal.event.reason, /^run_(complete|failed|interrupted)$/);
      assert.deepStrictEqual(r.items.filter((e) => e.channel === 'content').map((e) => e.event), expected(c));
      assert.equal(r.hooks.filter((h) => /^run\.(completed|failed|cancelled|stopped)$/.test(h.type)).length, 1);
      assert.equal(r.outcome.state, { run_complete: 'completed', run_failed: 'failed', run_interrupted: 'cancelled' }[terminal.event.reason]);
      assert.equal(r.stats.bytes, readFileSync(c.input).length);
    });
  }
}
