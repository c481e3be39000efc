// Memory is bounded by bytes (issue 24, item 6): with the stream paused or a handler taking 1 ms
// per event, the runner stops reading the harness's pipes once the byte budget (8 MiB) is
// buffered, so the harness blocks instead of this process growing. Measured as the growth of the
// peak resident set (VmHWM, reset through /proc/self/clear_refs), which must stay under the
// budget plus 64 MiB under the three floods of the issue — each offered in full and cut short
// after 1–2 s (without the bound each grew past 1 GB in that time). Each case runs in a fresh
// Node process so that nothing else this test runner allocates is measured.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';

import { FAKE, golden, repo } from './fake.mjs';

const BOUND = (8 + 64) * 1024 * 1024;

const HOST = `
const fs = require('node:fs');
const { Evolve } = require('agentstream');
const [fake, trace, flag, value, mode] = process.argv.slice(1);
const field = (f) => Number(fs.readFileSync('/proc/self/status', 'utf8').split('\\n').find((l) => l.startsWith(f)).split(/\\s+/)[1]) * 1024;
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const block = (ms) => { const until = Date.now() + ms; while (Date.now() < until); };
(async () => {
  const evolve = new Evolve({ config: { type: 'claude', bin: fake, env: { AGENTSTREAM_FAKE_TRACE: trace, [flag]: value } } });
  await sleep(200);
  fs.writeFileSync('/proc/self/clear_refs', '5');
  const before = field('VmRSS:');
  if (mode === 'paused') {
    const stream = evolve.stream({ prompt: 'x' });
    await sleep(1000); // nothing is read
    const grew = field('VmHWM:') - before;
    await stream.return();
    await stream.result;
    console.log(JSON.stringify({ grew }));
  } else {
    let calls = 0;
    evolve.on('content', () => { calls++; block(1); });
    setTimeout(() => evolve.interrupt('enough'), 2000);
    const result = await evolve.run({ prompt: 'x' });
    console.log(JSON.stringify({ grew: field('VmHWM:') - before, calls, state: result.state }));
  }
  process.exit(0);
})();
`;

for (const [what, flag, value, mode] of [
  ['1 GiB of stderr, stream paused', 'AGENTSTREAM_FAKE_FLOOD_STDERR', String(2 ** 30), 'paused'],
  ['3x10^6 stdout lines, stream paused', 'AGENTSTREAM_FAKE_FLOOD', '3000000', 'paused'],
  ['500 MB of answer text, a handler taking 1 ms per event', 'AGENTSTREAM_FAKE_FLOOD_TEXT', '500000000', 'slow'],
]) {
  test(`memory stays bounded: ${what}`, { skip: process.platform !== 'linux' }, () => {
    const out = execFileSync(process.execPath, ['-e', HOST, FAKE, golden('claude', 's1-text'), flag, value, mode], {
      cwd: repo,
      encoding: 'utf8',
      timeout: 120_000,
    });
    const r = JSON.parse(out.trim().split('\n').pop());
    if (mode === 'slow') assert.ok(r.calls > 100 && r.state === 'cancelled', JSON.stringify(r));
    assert.ok(r.grew < BOUND, `${what}: peak RSS grew by ${Math.round(r.grew / 2 ** 20)} MiB`);
  });
}
