// The secret-shape corpus (tests/secrets/corpus.jsonl) through every output path of the Node
// package: parse, Decoder, replay (items and hooks) and a real run of each harness's secret trace
// (tests/secrets/traces/: its recorded output with every corpus entry as a shell command, an edit
// and a written file) — content, lifecycle and onEvent handlers, the stream iterator. The raw
// stdout/stderr channels carry the process's bytes verbatim by design and are not checked; with
// redact: false every secret comes through (so the fixtures reach the masked fields).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

import { AGENTS, Decoder, Evolve, parse, replay } from 'agentstream';

import { FAKE, repo } from './fake.mjs';

const dir = join(repo, 'tests', 'secrets');
const SECRETS = readFileSync(join(dir, 'corpus.jsonl'), 'utf8')
  .split('\n')
  .filter((l) => l.trim() !== '')
  .flatMap((l) => JSON.parse(l).secrets);

const survivors = (value) => {
  const text = JSON.stringify(value);
  return SECRETS.filter((s) => text.includes(s) || text.includes(JSON.stringify(s).slice(1, -1)));
};
const traceOf = (agent) => readFileSync(join(dir, 'traces', `${agent}.input.jsonl`));

test('parse, Decoder and replay mask every secret of the corpus for every harness', () => {
  assert.ok(SECRETS.length >= 24);
  for (const agent of AGENTS) {
    const data = traceOf(agent);
    assert.deepEqual(survivors(parse(agent, data)), [], `${agent}: parse`);
    assert.deepEqual(new Set(survivors(parse(agent, data, { redact: false }))), new Set(SECRETS), `${agent}: redact: false`);
    const decoder = new Decoder(agent);
    const events = [];
    for (let i = 0; i < data.length; i += 4096) events.push(...decoder.feed(data.subarray(i, i + 4096)));
    events.push(...decoder.finish());
    assert.deepEqual(survivors(events), [], `${agent}: Decoder`);
    const r = replay(agent, data);
    assert.deepEqual(survivors(r.items.filter((e) => e.channel !== 'stdout' && e.channel !== 'stderr')), [], `${agent}: replay`);
    assert.deepEqual(survivors(r.hooks), [], `${agent}: hooks`);
    assert.ok(JSON.stringify(r.hooks).includes('[redacted]'), agent);
  }
  assert.throws(() => parse('claude', '', { redact: 'no' }), /redact must be a boolean/);
});

test('a real run masks every secret on every masked path', async () => {
  for (const agent of AGENTS) {
    const evolve = new Evolve({ config: { type: agent, bin: FAKE, env: { AGENTSTREAM_FAKE_TRACE: join(dir, 'traces', agent) } } });
    const seen = [];
    evolve.on('content', (e) => void seen.push(e));
    evolve.on('lifecycle', (e) => void seen.push(e));
    await evolve.run({ prompt: 'x', onEvent: (h) => void seen.push(h) });
    assert.deepEqual(survivors(seen), [], `${agent}: handlers`);
    const envelopes = [];
    for await (const e of evolve.stream({ prompt: 'x' })) {
      if (e.channel !== 'stdout' && e.channel !== 'stderr') envelopes.push(e);
    }
    assert.ok(envelopes.length > 0);
    assert.deepEqual(survivors(envelopes), [], `${agent}: stream`);
  }
});
