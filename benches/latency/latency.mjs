#!/usr/bin/env node
// The Node handler of the latency benchmark (benches/latency/run.py): one run of the paced emitter
// with an on('content', handler) handler, as a Node user writes it. The handler reads
// CLOCK_MONOTONIC first (process.hrtime.bigint(): libuv's uv_hrtime, CLOCK_MONOTONIC on Linux),
// then the stamps "@@<line>:<ns>;" in the event's text, and records now - stamp.
//
//   node latency.mjs EMITTER OUT_FILE     writes "<line> <latency ns>" per stamp; prints "state <state>"
import { writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const repo = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const require = createRequire(join(repo, 'node', 'package.json'));
const { Evolve } = require('agentstream');

const [emitter, outPath] = process.argv.slice(2);
if (!outPath) {
  console.error('usage: node latency.mjs EMITTER OUT_FILE');
  process.exit(2);
}
const lines = [];
const latencies = [];
const evolve = new Evolve({ config: { type: 'claude', bin: emitter } });
evolve.on('content', (event) => {
  const now = process.hrtime.bigint();
  const update = event.update;
  if (update.sessionUpdate !== 'agent_message_chunk') return;
  for (const token of update.content.text.split('@@').slice(1)) {
    const colon = token.indexOf(':');
    lines.push(token.slice(0, colon));
    latencies.push(now - BigInt(token.slice(colon + 1, token.indexOf(';'))));
  }
});
const result = await evolve.run({ prompt: 'latency' });
writeFileSync(outPath, lines.map((line, i) => `${line} ${latencies[i]}\n`).join(''));
console.log('state', result.state);
await evolve.close?.();
