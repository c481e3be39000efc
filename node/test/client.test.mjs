// connect(url, token) against a real `agentstream serve` (the CLI binary, release, with the fake
// harness as the agent): the same envelopes as a local run, resume by sequence, reconnection
// through dropped connections, cancel, gaps, errors.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, connect as tcpConnect } from 'node:net';
import { tmpdir } from 'node:os';
import { join, dirname } from 'node:path';

import { ConnectionLostError, DEFAULT_MAX_EVENT_BYTES, RemoteRun, ServerError, StreamGapError, connect, replay } from 'agentstream';

import { FAKE, checkEnvelopes, golden, sleep } from './fake.mjs';

/** The CLI next to the fake harness (`make test-node` builds both). */
const BIN = process.env.AGENTSTREAM_BIN || join(dirname(FAKE), 'agentstream');
const lines = (path) => readFileSync(path, 'utf8').split('\n').filter((l) => l.trim() !== '').map((l) => JSON.parse(l));

/** `agentstream serve` on 127.0.0.1:0 with the fake agents; resolves to { url, token, port, stop }. */
async function serve(limits = '') {
  assert.ok(existsSync(BIN), `${BIN} missing: cargo build --release -p agentstream-cli --bins`);
  const dir = mkdtempSync(join(tmpdir(), 'agentstream-node-serve-'));
  const agent = (name, extra = '') => `[agents.${name}]\nharness = "claude"\nbin = ${JSON.stringify(FAKE)}\n` +
    `env = { AGENTSTREAM_FAKE_TRACE = ${JSON.stringify(golden('claude', 's2-bash'))}${extra} }\n`;
  const config = join(dir, 'serve.toml');
  writeFileSync(config, agent('claude') + agent('slow', ', AGENTSTREAM_FAKE_DELAY_MS = "250"') +
    agent('hang', ', AGENTSTREAM_FAKE_HANG = "1"') + agent('flood', ', AGENTSTREAM_FAKE_FLOOD = "400"') + limits);
  const child = spawn(BIN, ['serve', '--config', config, '--listen', '127.0.0.1:0'], { stdio: ['ignore', 'pipe', 'ignore'] });
  let url;
  let token;
  for await (const line of createInterface({ input: child.stdout })) {
    url = url ?? line.match(/listening on (http:\/\/\S+)/)?.[1];
    token = token ?? line.match(/\(shown once, not stored\): (\S+)/)?.[1];
    if (line.includes(' try: curl')) break;
  }
  assert.ok(url && token, 'serve announced its address and token');
  return {
    url,
    token,
    port: Number(url.split(':').pop()),
    async stop() {
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.kill('SIGTERM');
      assert.equal(await exited, 0);
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

async function collect(iterable) {
  const out = [];
  for await (const x of iterable) out.push(x);
  return out;
}

let server;
let client;
before(async () => {
  server = await serve();
  client = connect(server.url, server.token, { timeoutMs: 20_000 });
});
after(async () => {
  await server?.stop();
});

test('a remote run yields the envelopes a local run does, then its result', async () => {
  const run = await client.run('claude', 'List the files');
  assert.ok(run instanceof RemoteRun && run.id.startsWith('run_'));
  const envs = await collect(run);
  const reasons = checkEnvelopes(envs);
  assert.equal(reasons.at(-1), 'run_complete');
  assert.ok(envs.every((e) => e.runId === run.id));
  const lifecycle = envs.find((e) => e.channel === 'lifecycle').event;
  assert.ok('sandboxId' in lifecycle && !('sandbox_id' in lifecycle), 'lifecycle events in the TypeScript shape');
  const content = envs.filter((e) => e.channel === 'content').map((e) => e.event);
  assert.deepEqual(content, lines(`${golden('claude', 's2-bash')}.expected.jsonl`));
  const local = replay('claude', readFileSync(`${golden('claude', 's2-bash')}.input.jsonl`));
  assert.deepEqual(content, local.items.filter((e) => e.channel === 'content').map((e) => e.event), 'as the local pipeline');
  const result = await run.wait();
  assert.equal(result.state, 'completed');
  assert.equal(result.runId, run.id);
  assert.equal(result.lastSequence, envs.at(-1).sequence);
  assert.match(result.finalText, /three files/);
  assert.equal(typeof result.pressure.peakBytes, 'number', 'camelCase like a local RunResult');
  assert.equal(typeof result.stats.invalidJson, 'number');
  assert.equal(typeof result.usage.promptTokens, 'number');
  assert.ok((await client.runs()).some((r) => r.id === run.id));
  assert.equal((await client.get(run.id)).status, 'completed');
  assert.ok((await client.agents()).includes('claude'));
});

test('stream after any point yields the identical tail', async () => {
  const run = await client.run('claude', 'List the files');
  const full = await collect(client.stream(run.id));
  for (const [k, env] of full.entries()) {
    assert.deepEqual(await collect(client.stream(run.id, { after: env.sequence })), full.slice(k + 1), `after ${env.sequence}`);
  }
});

/** A TCP proxy in front of the server whose connections the test cuts at will. */
function droppingProxy(port) {
  const live = new Set();
  const proxy = createServer((down) => {
    const up = tcpConnect(port, '127.0.0.1');
    live.add(down);
    live.add(up);
    down.pipe(up).pipe(down);
    const gone = () => {
      live.delete(down);
      live.delete(up);
      down.destroy();
      up.destroy();
    };
    down.on('error', gone).on('close', gone);
    up.on('error', gone).on('close', gone);
  });
  return new Promise((resolve) => proxy.listen(0, '127.0.0.1', () => resolve({
    port: proxy.address().port,
    dropAll() {
      for (const s of live) s.destroy();
    },
    close() {
      for (const s of live) s.destroy();
      proxy.close();
    },
  })));
}

test('the stream reconnects and resumes through dropped connections', async () => {
  const proxy = await droppingProxy(server.port);
  try {
    const through = connect(`http://127.0.0.1:${proxy.port}`, server.token, { timeoutMs: 20_000 });
    const run = await through.run('slow', 'List the files');
    const got = [];
    let lastDrop = Date.now();
    let drops = 0;
    for await (const env of run) {
      got.push(env);
      if (Date.now() - lastDrop > 400) {
        proxy.dropAll();
        drops += 1;
        lastDrop = Date.now();
      }
    }
    assert.ok(drops >= 2, `the connection really was cut while the run went on (${drops})`);
    checkEnvelopes(got);
    assert.deepEqual(got, await collect(client.stream(run.id)), 'nothing lost, nothing twice');
  } finally {
    proxy.close();
  }
});

test('cancel ends the run with one terminal, reason caller', async () => {
  const run = await client.run('hang', 'wait');
  const got = [];
  for await (const env of run) {
    got.push(env);
    if (got.length === 3) {
      const info = await run.cancel('the client pressed stop');
      assert.equal(info.status, 'cancelled');
    }
  }
  assert.equal(checkEnvelopes(got).at(-1), 'run_interrupted');
  const result = await run.wait();
  assert.equal(result.state, 'cancelled');
  assert.equal(result.cancelKind, 'caller');
  assert.match(result.cancelReason, /the client pressed stop/);
});

test('errors say what is wrong', async () => {
  await assert.rejects(connect(server.url, 'not-the-token').runs(), (e) =>
    e instanceof ServerError && e.status === 401 && e.error === 'unauthorized' && e.field === 'Authorization');
  await assert.rejects(client.run('gpt', 'hi'), (e) => e instanceof ServerError && e.status === 400 && e.field === 'agent' && /claude/.test(e.message));
  await assert.rejects(client.run('claude', ''), (e) => e instanceof ServerError && e.field === 'prompt');
  await assert.rejects(collect(client.stream('run_00000000000000000000000000000000')), (e) => e instanceof ServerError && e.status === 404);
  assert.throws(() => client.stream('x', { after: -1 }), TypeError);
  assert.throws(() => connect('ftp://x', 't'), TypeError);
  assert.ok(!String(connect(server.url, 'secret-token')).includes('secret-token'));
  // Nobody listening: retried, then a clear error.
  const dead = await new Promise((resolve) => {
    const s = createServer().listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
  const gone = connect(`http://127.0.0.1:${dead}`, 't', { maxRetries: 1 });
  await assert.rejects(collect(gone.stream('run_x')), ConnectionLostError);
});

test('a stream that is not the protocol is a protocol_error at once, not retried', async () => {
  const { createServer: createHttpServer } = await import('node:http');
  for (const [body, what] of [
    [Buffer.from("data: <html>a proxy's page</html>\n\n"), /not JSON/],
    [Buffer.concat([Buffer.from('data: {"sequence": 1}'), Buffer.from([0xff]), Buffer.from('\n\n')]), /not UTF-8/],
    [Buffer.from('data: [1, 2]\n\n'), /not an envelope/],
    [Buffer.from('event: gap\ndata: 5\n\n'), /not an object/],
  ]) {
    let requests = 0;
    const other = createHttpServer((_req, res) => {
      requests += 1;
      res.writeHead(200, { 'Content-Type': 'text/event-stream', 'Content-Length': body.length });
      res.end(body);
    });
    await new Promise((resolve) => other.listen(0, '127.0.0.1', resolve));
    try {
      const url = `http://127.0.0.1:${other.address().port}`;
      await assert.rejects(collect(connect(url, 't', { maxRetries: 3 }).stream('run_x')), (e) =>
        e instanceof ServerError && e.status === 200 && e.error === 'protocol_error' && what.test(e.message) &&
        e.message.includes('/v1/runs/run_x/events'));
      assert.equal(requests, 1, 'not retried: asking again would get the same');
    } finally {
      await new Promise((resolve) => other.close(resolve));
    }
  }
});

/**
 * An HTTP server answering the n-th stream request (counted from 0; `server.paths[n]` is its
 * path and query) with `answer(n, path)`: a body (200, written by `write`), `{ status, headers,
 * body }`, or `undefined` (204).
 */
async function answering(answer, write = (res, body) => res.end(body)) {
  const { createServer: createHttpServer } = await import('node:http');
  const server = createHttpServer((req, res) => {
    server.paths.push(req.url);
    const got = answer(server.requests++, req.url);
    if (got === undefined) return res.writeHead(204).end();
    const { status = 200, headers = {}, body } = typeof got === 'string' ? { body: got } : got;
    res.writeHead(status, { 'Content-Type': status === 200 ? 'text/event-stream' : 'application/json', ...headers });
    if (status !== 200) return res.end(body);
    write(res, body);
  });
  server.requests = 0;
  server.paths = [];
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  return server;
}

/** An HTTP server answering the n-th stream request with `answers[n]` (as `answering`), then 204. */
const scripted = (answers, write) => answering((n) => answers[n], write);

const terminal = JSON.stringify({ runId: 'run_x', sequence: 0, channel: 'stdout', event: 'done\n' });

test('a URL that is not an agentstream server is a protocol_error', async () => {
  const server = await scripted(["<html>a proxy's page</html>"]);
  try {
    await assert.rejects(connect(`http://127.0.0.1:${server.address().port}`, 't').agents(), (e) =>
      e instanceof ServerError && e.error === 'protocol_error' && /not JSON/.test(e.message) && e.message.includes('/v1/agents'));
  } finally {
    await new Promise((resolve) => server.close(resolve));
  }
});

test('events whose lines end in CRLF or CR are read, even split between chunks', async () => {
  // The envelope's JSON over two data lines: an empty line read between them (a CRLF split
  // between two chunks taken for two line ends) would dispatch half of it.
  const cut = terminal.indexOf('"channel"');
  const crlf = `retry: 10\r\n\r\nid: 0\r\ndata: ${terminal.slice(0, cut)}\r\ndata: ${terminal.slice(cut)}\r\n\r\n`;
  for (const body of [crlf, crlf.replaceAll('\r\n', '\r')]) {
    // Written a byte at a time: a CRLF split between two chunks is one line end, not two.
    const server = await scripted([body], async (res, text) => {
      for (const ch of text) {
        res.write(ch);
        await sleep(1);
      }
      res.end();
    });
    try {
      const envs = await collect(connect(`http://127.0.0.1:${server.address().port}`, 't', { maxRetries: 2 }).stream('run_x'));
      assert.deepEqual(envs.map((e) => e.sequence), [0], JSON.stringify(body));
    } finally {
      await new Promise((resolve) => server.close(resolve));
    }
  }
});

test('responses a proxy ends after a heartbeat are not failures', async () => {
  // A quiet run behind a proxy that ends every response after a while: a heartbeat, no envelope.
  const quiet = 'retry: 10\n\n: heartbeat\n\n';
  const server = await scripted([...Array(8).fill(quiet), `retry: 10\n\nid: 0\ndata: ${terminal}\n\n`]);
  try {
    const envs = await collect(connect(`http://127.0.0.1:${server.address().port}`, 't', { maxRetries: 3 }).stream('run_x'));
    assert.deepEqual(envs.map((e) => e.sequence), [0]);
    assert.equal(server.requests, 10, '8 quiet responses, the envelope, then 204');
  } finally {
    await new Promise((resolve) => server.close(resolve));
  }
});

const envelopeEvent = (sequence) =>
  `id: ${sequence}\ndata: ${JSON.stringify({ runId: 'run_x', sequence, channel: 'stdout', event: `line ${sequence}\n` })}\n\n`;
const limitReached = { status: 429, body: '{"error": "limit_reached", "message": "subscribers_per_run (1) reached"}' };
const urlOf = (server) => `http://127.0.0.1:${server.address().port}`;
const closed = (server) => new Promise((resolve) => server.close(resolve));

test('a 429 to a reconnect is retried after its Retry-After', async () => {
  // The server has not yet noticed that the stream's first connection is gone, so its slot is
  // still taken when the stream comes back for what follows sequence 0.
  const server = await scripted([
    `retry: 10\n\n${envelopeEvent(0)}`,
    limitReached,
    limitReached,
    { ...limitReached, headers: { 'Retry-After': '1' } },
    `retry: 10\n\n${envelopeEvent(1)}`,
  ]);
  try {
    const started = Date.now();
    const envs = await collect(connect(urlOf(server), 't', { maxRetries: 3 }).stream('run_x'));
    assert.deepEqual(envs.map((e) => e.sequence), [0, 1]);
    assert.ok(Date.now() - started >= 1000, 'the Retry-After waited for (the backoff is 10 ms)');
    assert.deepEqual(server.paths.slice(1, 5), Array(4).fill('/v1/runs/run_x/events?after=0'), 'resumed, nothing twice');
    assert.equal(server.requests, 6);
  } finally {
    await closed(server);
  }
});

test('a 429 to the first request or to too many reconnects is an error', async () => {
  // The first request: the tenant's streams are at their limit, not this stream's own.
  let server = await scripted([limitReached]);
  try {
    await assert.rejects(collect(connect(urlOf(server), 't', { maxRetries: 3 }).stream('run_x')), (e) =>
      e instanceof ServerError && e.status === 429 && e.error === 'limit_reached');
    assert.equal(server.requests, 1);
  } finally {
    await closed(server);
  }
  // Reconnects refused maxRetries + 1 times in a row.
  server = await scripted([`retry: 10\n\n${envelopeEvent(0)}`, ...Array(5).fill(limitReached)]);
  try {
    const got = [];
    await assert.rejects(async () => {
      for await (const env of connect(urlOf(server), 't', { maxRetries: 2 }).stream('run_x')) got.push(env.sequence);
    }, (e) => e instanceof ConnectionLostError && /429 limit_reached/.test(e.cause.message));
    assert.deepEqual(got, [0]);
    assert.equal(server.requests, 4);
  } finally {
    await closed(server);
  }
  // Any other 4xx to a reconnect stays fatal.
  server = await scripted([`retry: 10\n\n${envelopeEvent(0)}`, { status: 403, body: '{"error": "forbidden", "message": "no"}' }]);
  try {
    await assert.rejects(collect(connect(urlOf(server), 't', { maxRetries: 3 }).stream('run_x')), (e) =>
      e instanceof ServerError && e.status === 403);
    assert.equal(server.requests, 2);
  } finally {
    await closed(server);
  }
});

test('an event or a body that never ends is a protocol_error, not a growing buffer', async () => {
  const { createServer: createHttpServer } = await import('node:http');
  let streams = 0;
  const other = createHttpServer((req, res) => {
    if (req.url === '/v1/agents') {
      res.writeHead(200, { 'Content-Type': 'application/json' });
      res.end(`{"agents": ["${'x'.repeat(5000)}"]}`);
      return;
    }
    streams += 1;
    res.writeHead(200, { 'Content-Type': 'text/event-stream' });
    if (req.url.startsWith('/v1/runs/lines/')) {
      // Short data lines, but the event never ends.
      res.end('data: 1\n'.repeat(300));
      return;
    }
    // One line that never ends, sent in pieces.
    res.write('data: ');
    const more = setInterval(() => res.write('x'.repeat(512)), 5);
    res.on('close', () => clearInterval(more));
  });
  await new Promise((resolve) => other.listen(0, '127.0.0.1', resolve));
  try {
    const c = connect(`http://127.0.0.1:${other.address().port}`, 't', { maxEventBytes: 1024, maxRetries: 3 });
    const tooLong = (what) => (e) =>
      e instanceof ServerError && e.error === 'protocol_error' && e.message.includes(`${what} longer than maxEventBytes (1024 bytes)`);
    await assert.rejects(collect(c.stream('endless')), tooLong('an event'));
    await assert.rejects(collect(c.stream('lines')), tooLong('an event'));
    assert.equal(streams, 2, 'not retried');
    await assert.rejects(c.agents(), tooLong('a response body'));
    assert.throws(() => connect('http://127.0.0.1:1', 't', { maxEventBytes: 10 }), RangeError);
    assert.equal(DEFAULT_MAX_EVENT_BYTES, 256 * 1024 * 1024);
  } finally {
    other.closeAllConnections();
    await new Promise((resolve) => other.close(resolve));
  }
});

test('a gap is thrown or skipped, never silent', async () => {
  const small = await serve('[limits]\nreplay_events = 20\n');
  try {
    const c = connect(small.url, small.token);
    const run = await c.run('flood', 'x');
    await run.wait();
    await assert.rejects(collect(c.stream(run.id, { after: 2 })), (e) =>
      e instanceof StreamGapError && e.gap.after === 2 && e.gap.missing > 0 && e.gap.reason === 'evicted');
    const gaps = [];
    const tail = await collect(c.stream(run.id, { after: 2, gaps: 'skip', onGap: (g) => gaps.push(g) }));
    assert.equal(gaps.length, 1);
    assert.equal(tail.length, 20);
    assert.equal(tail[0].sequence, gaps[0].resumeFrom);
  } finally {
    await small.stop();
  }
});

function gapEvent(reason, after, missing, resumeFrom) {
  const gap = { type: 'gap', runId: 'run_x', reason, after, missing, resumeFrom, message: `${reason}: ${missing} after ${after}` };
  return `event: gap\ndata: ${JSON.stringify(gap)}\n\n`;
}

const afterOf = (path) => Number(new URL(path, 'http://x').searchParams.get('after'));
const tooSlow = `retry: 10\n\n${envelopeEvent(0)}${gapEvent('too_slow', 0, 15)}`;
const envelopeEvents = (from, to) => Array.from({ length: to - from + 1 }, (_, k) => envelopeEvent(from + k)).join('');

/**
 * A run of sequences 0 to `last` whose reader fell behind: the first request gets sequence 0 and
 * a `too_slow` gap for 1…15 (no `resumeFrom`: the response ends); by the time it comes back, the
 * run evicted everything through `evictedThrough` (>= 15). Later requests are answered as the
 * server answers `?after=N`.
 */
const evicting = (evictedThrough, last = 19) => answering((n, path) => {
  if (n === 0) return tooSlow;
  const after = afterOf(path);
  if (after >= last) return undefined;
  const gap = after < evictedThrough ? gapEvent('evicted', after, evictedThrough - after, evictedThrough + 1) : '';
  return `retry: 10\n\n${gap}${envelopeEvents(Math.max(after, evictedThrough) + 1, last)}`;
});

/** The sequences a `gaps: 'skip'` stream of `server` yields, and the messages of the gaps it reports. */
async function skipped(server, after) {
  const gaps = [];
  const options = { gaps: 'skip', onGap: (g) => gaps.push(g.message), ...(after === undefined ? {} : { after }) };
  const envs = await collect(connect(urlOf(server), 't', { maxRetries: 3 }).stream('run_x', options));
  return [envs.map((e) => e.sequence), gaps];
}

test('a too_slow gap is reported once, not again as evicted', async () => {
  let server = await evicting(15);
  try {
    assert.deepEqual(await skipped(server), [[0, 16, 17, 18, 19], ['too_slow: 15 after 0']]);
    assert.equal(server.paths[1], '/v1/runs/run_x/events?after=15', 'resumed after what it was told is gone');
  } finally {
    await closed(server);
  }
  // Evicted further meanwhile: only the numbers it was not told about yet are reported again.
  server = await evicting(17);
  try {
    assert.deepEqual(await skipped(server), [[0, 18, 19], ['too_slow: 15 after 0', 'evicted: 2 after 15']]);
  } finally {
    await closed(server);
  }
});

test('a gap notice of numbers already reported is not reported again', async () => {
  // A server that resumes from the old point regardless: its `evicted` notice repeats 1…15.
  let server = await scripted([tooSlow, gapEvent('evicted', 0, 15, 16) + envelopeEvents(16, 19)]);
  try {
    assert.deepEqual(await skipped(server), [[0, 16, 17, 18, 19], ['too_slow: 15 after 0']]);
  } finally {
    await closed(server);
  }
  // New numbers in it (16, 17): reported.
  server = await scripted([tooSlow, gapEvent('evicted', 0, 17, 18) + envelopeEvents(18, 19)]);
  try {
    assert.deepEqual(await skipped(server), [[0, 18, 19], ['too_slow: 15 after 0', 'evicted: 17 after 0']]);
  } finally {
    await closed(server);
  }
});

test('a finished run of which nothing is left is reported once and ends', async () => {
  // The server's answer to a resume point of a run whose every envelope retention removed: a gap
  // through the terminal (9), no resumeFrom; asked for what follows the terminal, 204.
  const server = await answering((_n, path) => {
    const after = afterOf(path);
    return after >= 9 ? undefined : gapEvent('evicted', after, 9 - after);
  });
  try {
    assert.deepEqual(await skipped(server, 3), [[], ['evicted: 6 after 3']]);
    assert.deepEqual(server.paths.slice(1), ['/v1/runs/run_x/events?after=9']);
  } finally {
    await closed(server);
  }
});

test('leaving the loop early or aborting closes the stream', async () => {
  const run = await client.run('hang', 'wait');
  let n = 0;
  for await (const env of run) {
    assert.equal(env.runId, run.id);
    if (++n === 2) break;
  }
  const controller = new AbortController();
  const seen = [];
  const reading = (async () => {
    for await (const env of client.stream(run.id, { signal: controller.signal })) seen.push(env);
  })();
  await sleep(300);
  controller.abort();
  await reading;
  assert.ok(seen.length >= 2);
  await run.cancel();
});

test('runs() fetches every page of the list and refuses a next page that is not the list\'s', async () => {
  const page = (ids, next) => ({
    body: JSON.stringify({ runs: ids.map((id) => ({ id, status: 'completed' })), ...(next === undefined ? {} : { next }) }),
  });
  // A JSON answer, not the event stream `answering` sends by default.
  const json = (answer) => (n) => {
    const got = answer(n);
    return got && { ...got, headers: { 'Content-Type': 'application/json' } };
  };
  let server = await answering(json((n) => [page(['r3', 'r2'], '/v1/runs?limit=1000&before=t~r2'), page(['r1'])][n]),
    (res, body) => res.end(body));
  try {
    const runs = await connect(`http://127.0.0.1:${server.address().port}`, 't').runs();
    assert.deepEqual(runs.map((r) => r.id), ['r3', 'r2', 'r1']);
    assert.deepEqual(server.paths, ['/v1/runs?limit=1000', '/v1/runs?limit=1000&before=t~r2']);
  } finally {
    await new Promise((resolve) => server.close(resolve));
  }
  for (const next of ['https://elsewhere.example/v1/runs?x', '/v1/runs?limit=1000', 5]) {
    server = await answering(json(() => page(['r1'], next)), (res, body) => res.end(body));
    try {
      await assert.rejects(connect(`http://127.0.0.1:${server.address().port}`, 't').runs(), (e) =>
        e instanceof ServerError && e.error === 'protocol_error', String(next));
    } finally {
      await new Promise((resolve) => server.close(resolve));
    }
  }
});
