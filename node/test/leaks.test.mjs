// No memory leaks per event (issue 24, item 9): a million events through each path of the
// package — the Decoder, and real runs delivering content events to a handler and hook events to
// onEvent — leave the JavaScript heap and the resident set where a warm-up left them.
//
// Each case runs in a fresh Node process with --expose-gc and one malloc arena
// (MALLOC_ARENA_MAX=1): with glibc's default of one arena per thread, the resident set of a
// multi-threaded process wanders by tens of MiB with whichever arena a thread happened to use;
// one arena narrows that noise (a leak shows all the same). The run case counts the events
// JavaScript actually received (under backpressure the core merges text deltas, so a flood
// delivers fewer events than deltas) and starts runs until a million arrived. The resident set
// is judged by the lowest of the last three samples: a leak raises that floor, the allocator's
// noise only makes peaks. The slacks catch a native leak of 32 bytes or more per event and a
// retained JavaScript object of 4 bytes or more per event.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';

import { FAKE, golden, repo } from './fake.mjs';

const EVENTS = 1_000_000;
const RSS_SLACK = 32 * 1024 * 1024;
const HEAP_SLACK = 4 * 1024 * 1024;

const HOST = `
const fs = require('node:fs');
const { Decoder, Evolve } = require('agentstream');
const [fake, trace, mode, events] = process.argv.slice(1);
const measure = () => {
  global.gc();
  global.gc();
  const rss = Number(fs.readFileSync('/proc/self/status', 'utf8').split('\\n').find((l) => l.startsWith('VmRSS:')).split(/\\s+/)[1]) * 1024;
  return { rss, heap: process.memoryUsage().heapUsed };
};
const line = (n) => '{"type":"stream_event","event":{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"' + String(n).padStart(12, '0') + ' abcdefghijklmnopqrstuvwxyz"}},"session_id":"leak","parent_tool_use_id":null}\\n';
(async () => {
  if (mode === 'decoder') {
    const batch = Buffer.from(Array.from({ length: 10000 }, (_, i) => line(i)).join(''));
    const decoder = new Decoder('claude');
    const decode = (batches) => { let n = 0; for (let i = 0; i < batches; i++) n += decoder.feed(batch).length; return n; };
    decode(20);
    const before = measure();
    const delivered = decode(Number(events) / 10000);
    const after = measure();
    console.log(JSON.stringify({ delivered, baseline: before, samples: [after] }));
  } else {
    // 67 bytes per delta (the fake harness's flood_text): about 67 MB a run.
    const run = async () => {
      const evolve = new Evolve({ config: { type: 'claude', bin: fake, env: { AGENTSTREAM_FAKE_TRACE: trace, AGENTSTREAM_FAKE_FLOOD_TEXT: String(1000000 * 67) } } });
      let contents = 0, hooks = 0;
      evolve.on('content', () => { contents++; });
      const result = await evolve.run({ prompt: 'x', onEvent: () => { hooks++; } });
      if (result.state !== 'completed' || contents === 0 || hooks === 0) throw new Error('run: ' + JSON.stringify({ state: result.state, contents, hooks }));
      return contents + hooks;
    };
    // Warm-up: two runs (arenas, thread stacks, V8's heap reach their size).
    const warm = [];
    for (let i = 0; i < 2; i++) { await run(); warm.push(measure()); }
    const baseline = { rss: Math.max(...warm.map((m) => m.rss)), heap: Math.max(...warm.map((m) => m.heap)) };
    let delivered = 0;
    const samples = [];
    while (delivered < Number(events) || samples.length < 3) { delivered += await run(); samples.push(measure()); }
    console.log(JSON.stringify({ delivered, baseline, samples }));
  }
  process.exit(0);
})();
`;

for (const mode of ['decoder', 'run']) {
  test(`a million events leak nothing: ${mode}`, { skip: process.platform !== 'linux' }, () => {
    const out = execFileSync(process.execPath, ['--expose-gc', '-e', HOST, FAKE, golden('claude', 's1-text'), mode, String(EVENTS)], {
      cwd: repo,
      encoding: 'utf8',
      env: { ...process.env, MALLOC_ARENA_MAX: '1' },
      timeout: 300_000,
    });
    const r = JSON.parse(out.trim().split('\n').pop());
    const last = r.samples[r.samples.length - 1];
    // The floor of the last three samples: a leak raises it; the allocator's noise only peaks.
    const floor = Math.min(...r.samples.slice(-3).map((s) => s.rss));
    const mib = (b) => Math.round(b / 2 ** 20);
    const why = `${mode}: ${r.delivered} events; baseline rss ${mib(r.baseline.rss)} MiB heap ${mib(r.baseline.heap)} MiB; ` +
      `after each run rss ${r.samples.map((s) => mib(s.rss))} MiB heap ${r.samples.map((s) => mib(s.heap))} MiB`;
    assert.ok(r.delivered >= EVENTS, why);
    assert.ok(floor - r.baseline.rss < RSS_SLACK, `resident set grew: ${why}`);
    assert.ok(last.heap - r.baseline.heap < HEAP_SLACK, `heap grew: ${why}`);
  });
}
