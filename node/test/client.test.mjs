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

/** An HTTP server answering the n-th stream request with `bodies[n]` (200), then 204. */
async function scripted(bodies, write = (res, body) => res.end(body)) {
  const { createServer: createHttpServer } = await import('node:http');
  const server = createHttpServer((_req, res) => {
    const body = bodies[server.requests++];
    if (body === undefined) return res.writeHead(204).end();
    res.writeHead(200, { 'Content-Type': 'text/event-stream' });
    write(res, body);
  });
  server.requests = 0;
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  return server;
}

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
  const crlf = `retry: 10\r\n\r\nid: 0\r\ndata: ${terminal}\r\n\r\n`;
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
