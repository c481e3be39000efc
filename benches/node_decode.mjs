#!/usr/bin/env node
// Node throughput against the shared plain-JavaScript reference, per harness corpus, side by side
// in one run (docs/benchmarks.md).
//
//   node benches/node_decode.mjs [--corpus DIR | --size-mib 16] [--clis claude,...,mixed]
//                                [--pairs 5] [--no-runs] [--json OUT]
//
// The reference is ../shared/bench/js_baseline.mjs (imported from there, never copied): what a
// Node user would write — StringDecoder, line split, JSON.parse, a small per-CLI mapping to
// ACP-style events, a callback. The corpora are ../shared/bench/make_corpus.py's (one per CLI and
// `mixed`, built into a temporary folder at --size-mib unless --corpus names a folder of them).
// The callback is the reference's own (`countingCallback`: one lookup, one increment); agentstream
// hands it each event's `update`.
//
// In memory: both sides read the corpus file in 64 KiB chunks (the same reads) and decode it:
//   reference    createBaseline(cli, callback).feed(chunk) … finish()
//   Decoder      new Decoder(cli).feed(chunk) → callback(event.update) for each event … finish()
//   (mixed: the reference routes lines by mixed.segments.tsv; agentstream feeds each segment's
//   bytes to a decoder of its CLI.)
// Real runs: the fake harness (target/release/fake-harness) prints the corpus on its stdout line
// by line, as the CLI would, one process per run (mixed: one per CLI, in turn):
//   reference    child_process.spawn of the harness, every 'data' chunk to createBaseline
//   Evolve.run   await evolve.run(...) with an on('content') handler (the buffer's marks raised so
//                no text delta is merged: every event reaches JavaScript)
//
// The machine is shared and noisy: each comparison runs as --pairs pairs, the order alternating
// (reference first, then agentstream first, …); each pair gives a ratio of MB/s (wall-clock; CPU
// time of this process, threads included, beside it), and the median ratio is reported with the
// lowest and highest. The reference maps less than agentstream (no usage, titles, locations or
// envelope fields), so events/s are not comparable: MB/s are.
import { spawn } from 'node:child_process';
import { closeSync, existsSync, mkdirSync, mkdtempSync, openSync, readFileSync, readSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { execFileSync } from 'node:child_process';

const here = dirname(fileURLToPath(import.meta.url));
const repo = join(here, '..');
const require = createRequire(join(repo, 'node', 'package.json'));
const { Decoder, Evolve } = require('agentstream');

const args = process.argv.slice(2);
const opt = (name, dflt) => {
  const i = args.indexOf(`--${name}`);
  return i >= 0 ? args[i + 1] : dflt;
};
const PAIRS = Number(opt('pairs', 5));
const SIZE_MIB = Number(opt('size-mib', 16));
const CLIS = opt('clis', 'claude,codex,gemini,qwen,kimi,opencode,droid,mixed').split(',');
const RUNS = !args.includes('--no-runs');
const JSON_OUT = opt('json', undefined);
const CHUNK = 64 * 1024;
const shared = process.env.AGENTSTREAM_SHARED ?? join(repo, '..', 'shared');
const fake = join(process.env.CARGO_TARGET_DIR ?? join(repo, 'target'), 'release', 'fake-harness');

if (!existsSync(join(shared, 'bench', 'js_baseline.mjs'))) {
  console.error(`node_decode: ${shared}/bench/js_baseline.mjs not found (set AGENTSTREAM_SHARED to the shared folder)`);
  process.exit(2);
}
if (RUNS && !existsSync(fake)) {
  console.error(`node_decode: ${fake} is missing: cargo build --release -p agentstream-cli --bins (or --no-runs)`);
  process.exit(2);
}
const { createBaseline, routesFor, countingCallback } = await import(pathToFileURL(join(shared, 'bench', 'js_baseline.mjs')).href);

const work = mkdtempSync(join(tmpdir(), 'agentstream-node-bench-'));
process.on('exit', () => rmSync(work, { recursive: true, force: true }));
let corpus = opt('corpus', undefined);
if (!corpus) {
  corpus = join(work, 'corpus');
  execFileSync('python3', [join(shared, 'bench', 'make_corpus.py'), corpus, '--size-mib', String(SIZE_MIB)], { stdio: 'ignore' });
}

/** [cli, firstByte, bytes] per segment of mixed.jsonl. */
function segments() {
  return readFileSync(join(corpus, 'mixed.segments.tsv'), 'utf8').split('\n').filter(Boolean)
    .map((ln) => ln.split('\t')).map(([cli, , , offset, bytes]) => [cli, Number(offset), Number(bytes)]);
}

/** Read `path` in 64 KiB chunks, handing each (and its file offset) to `take`. */
function readChunks(path, take) {
  const fd = openSync(path, 'r');
  const buf = Buffer.allocUnsafe(CHUNK);
  let offset = 0;
  try {
    let n;
    while ((n = readSync(fd, buf, 0, CHUNK, null)) > 0) {
      take(buf.subarray(0, n), offset);
      offset += n;
    }
  } finally {
    closeSync(fd);
  }
}

// ---- in memory ------------------------------------------------------------------------------

function referenceDecode(name) {
  const cb = countingCallback();
  const b = createBaseline(routesFor(corpus, name), cb);
  readChunks(join(corpus, `${name}.jsonl`), (chunk) => b.feed(chunk));
  b.finish();
}

function agentstreamDecode(name) {
  const cb = countingCallback();
  const deliver = (events) => {
    for (let i = 0; i < events.length; i++) cb(events[i].update);
  };
  if (name !== 'mixed') {
    const d = new Decoder(name);
    readChunks(join(corpus, `${name}.jsonl`), (chunk) => deliver(d.feed(chunk)));
    deliver(d.finish());
    return;
  }
  const decoders = new Map();
  const segs = segments();
  let s = 0;
  readChunks(join(corpus, 'mixed.jsonl'), (chunk, offset) => {
    let at = 0;
    while (at < chunk.length && s < segs.length) {
      const [cli, first, bytes] = segs[s];
      const end = Math.min(chunk.length, first + bytes - offset);
      let d = decoders.get(cli);
      if (!d) decoders.set(cli, (d = new Decoder(cli)));
      deliver(d.feed(chunk.subarray(at, end)));
      at = end;
      if (offset + at >= first + bytes) s++;
    }
  });
  for (const d of decoders.values()) deliver(d.finish());
}

// ---- real runs ------------------------------------------------------------------------------

/** The files the fake harness plays for a corpus: [cli, trace prefix]. */
const traces = new Map();
function tracesOf(name) {
  if (traces.has(name)) return traces.get(name);
  const dir = join(work, 'traces', name);
  mkdirSync(dir, { recursive: true });
  const out = [];
  if (name !== 'mixed') {
    symlinkSync(join(corpus, `${name}.jsonl`), join(dir, `${name}.input.jsonl`));
    out.push([name, join(dir, name)]);
  } else {
    const bytes = readFileSync(join(corpus, 'mixed.jsonl'));
    const parts = new Map();
    for (const [cli, first, n] of segments()) {
      if (!parts.has(cli)) parts.set(cli, []);
      parts.get(cli).push(bytes.subarray(first, first + n));
    }
    for (const [cli, list] of parts) {
      writeFileSync(join(dir, `${cli}.input.jsonl`), Buffer.concat(list));
      out.push([cli, join(dir, cli)]);
    }
  }
  traces.set(name, out);
  return out;
}

async function referenceRun(name) {
  for (const [cli, prefix] of tracesOf(name)) {
    const cb = countingCallback();
    const b = createBaseline(cli, cb);
    await new Promise((resolve, reject) => {
      const child = spawn(fake, ['-p', 'bench'], {
        env: { ...process.env, AGENTSTREAM_FAKE_TRACE: prefix },
        stdio: ['ignore', 'pipe', 'ignore'],
      });
      child.stdout.on('data', (chunk) => b.feed(chunk));
      child.on('error', reject);
      child.on('close', () => {
        b.finish();
        resolve();
      });
    });
  }
}

const NO_MERGE = { highWater: 1_000_000_000, byteBudget: 4_000_000_000, stallMs: 600_000 };

async function agentstreamRun(name) {
  for (const [cli, prefix] of tracesOf(name)) {
    const cb = countingCallback();
    const evolve = new Evolve({ config: { type: cli, bin: fake, env: { AGENTSTREAM_FAKE_TRACE: prefix } } });
    evolve.on('content', (event) => cb(event.update));
    const result = await evolve.run({ prompt: 'bench', limits: NO_MERGE });
    if (result.handlerErrors !== 0 || result.pressure.coalesced !== 0) {
      throw new Error(`${cli}: ${result.handlerErrors} handler errors, ${result.pressure.coalesced} merged`);
    }
  }
}

// ---- measuring ------------------------------------------------------------------------------

async function timed(fn, name) {
  const c0 = process.cpuUsage();
  const t0 = process.hrtime.bigint();
  await fn(name);
  const wall = Number(process.hrtime.bigint() - t0) / 1e9;
  const c = process.cpuUsage(c0);
  return { wall, cpu: (c.user + c.system) / 1e6 };
}

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
};

async function compare(name, reference, ours) {
  const pairs = [];
  for (let p = 0; p < PAIRS; p++) {
    let r, o;
    if (p % 2 === 0) {
      r = await timed(reference, name);
      o = await timed(ours, name);
    } else {
      o = await timed(ours, name);
      r = await timed(reference, name);
    }
    pairs.push({ reference: r, agentstream: o, wall: r.wall / o.wall, cpu: r.cpu / o.cpu });
  }
  return pairs;
}

const loadavg = () => readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ');
const results = {};
const rows = [];
const load0 = loadavg();
for (const name of CLIS) {
  const bytes = readFileSync(join(corpus, `${name}.jsonl`)).length;
  // One untimed pass of each: the JIT's first compilation is not what a long-lived process pays.
  referenceDecode(name);
  agentstreamDecode(name);
  const kinds = [['Decoder', referenceDecode, agentstreamDecode]];
  if (RUNS) kinds.push(['run', referenceRun, agentstreamRun]);
  for (const [kind, reference, ours] of kinds) {
    const pairs = await compare(name, reference, ours);
    results[`${name}/${kind}`] = { bytes, pairs };
    const mbs = (side) => bytes / 1e6 / median(pairs.map((x) => x[side].wall));
    const w = pairs.map((x) => x.wall);
    rows.push([name, kind, mbs('reference'), mbs('agentstream'), median(w), Math.min(...w), Math.max(...w),
      median(pairs.map((x) => x.cpu))]);
    const last = rows[rows.length - 1];
    console.error(`  ${name} ${kind}: ${last[4].toFixed(2)}x`);
  }
}

const f = (x, n = 2) => x.toFixed(n);
console.log(`node ${process.version}; corpus ${corpus === join(work, 'corpus') ? `make_corpus.py --size-mib ${SIZE_MIB}` : corpus}; ` +
  `median of ${PAIRS} alternating pairs; load average ${load0} before, ${loadavg()} after`);
console.log(`${'corpus'.padEnd(9)} ${'mode'.padEnd(8)} ${'ref MB/s'.padStart(9)} ${'ours MB/s'.padStart(10)} ` +
  `${'ratio'.padStart(6)} ${'(min..max)'.padStart(13)} ${'cpu ratio'.padStart(9)}`);
for (const [name, kind, ref, ours, ratio, lo, hi, cpu] of rows) {
  console.log(`${name.padEnd(9)} ${kind.padEnd(8)} ${f(ref, 1).padStart(9)} ${f(ours, 1).padStart(10)} ` +
    `${(f(ratio) + 'x').padStart(6)} ${`(${f(lo)}..${f(hi)})`.padStart(13)} ${(f(cpu) + 'x').padStart(9)}`);
}
console.log('ratio: reference time / agentstream time (wall clock; > 1 = agentstream faster); targets: Decoder >= 1.2x, run >= 1.0x');
if (JSON_OUT) writeFileSync(JSON_OUT, JSON.stringify({ node: process.version, load: [load0, loadavg()], results }, null, 1) + '\n');
