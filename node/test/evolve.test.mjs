// The Evolve API beyond one run (real runs through the fake harness): background runs, an
// AbortSignal on run() and on the stream iterator, the conversation successive runs continue,
// status(), off(), and `await using` (Symbol.asyncDispose) killing a run still going on.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { BackgroundRun, Evolve, InvalidArgumentError } from 'agentstream';

import { checkLog, fakeEvolve, recorder, sleep } from './fake.mjs';

test('run({ background: true }) resolves at once with a handle whose result resolves when the run ends', async () => {
  const evolve = fakeEvolve('gemini', 's2-bash', { AGENTSTREAM_FAKE_DELAY_MS: '20' });
  const { log, onEvent } = recorder(evolve);
  const handle = await evolve.run({ prompt: 'x', background: true, onEvent });
  assert.ok(handle instanceof BackgroundRun);
  assert.equal(handle.done, false);
  assert.equal(evolve.activeRunId, handle.runId);
  assert.equal(evolve.status().activeRunId, handle.runId);
  const result = await handle.result;
  assert.equal(result.state, 'completed');
  assert.equal(result.runId, handle.runId);
  assert.equal(handle.done, true);
  assert.equal(checkLog(log).at(-1), 'run_background_complete', "the core's background terminal");

  const command = await evolve.executeCommand({ command: 'sleep 30', background: true, killGraceMs: 100 });
  await sleep(100);
  command.cancel('not needed');
  const cancelled = await command.result;
  assert.equal(cancelled.state, 'cancelled');
  assert.match(cancelled.cancelReason, /not needed/);
});

test('an AbortSignal cancels a run (it still resolves with its result) and a stream (it ends with the terminal)', async () => {
  const evolve = fakeEvolve('claude', 's1-text', { AGENTSTREAM_FAKE_HANG: '1' });
  const { log, onEvent } = recorder(evolve);
  const controller = new AbortController();
  const running = evolve.run({ prompt: 'x', onEvent, signal: controller.signal, killGraceMs: 200 });
  await sleep(150);
  controller.abort(new Error('the user closed the tab'));
  const result = await running;
  assert.equal(result.state, 'cancelled');
  assert.equal(result.cancelKind, 'caller');
  assert.match(result.cancelReason, /aborted: the user closed the tab/);
  assert.equal(log.at(-1).event.type, 'run.cancelled');

  const streamController = new AbortController();
  const s = evolve.stream({ prompt: 'x', signal: streamController.signal, killGraceMs: 200 });
  const envelopes = [];
  for await (const e of s) {
    envelopes.push(e);
    if (e.sequence === 1) streamController.abort();
  }
  assert.equal(envelopes.at(-1).event.reason, 'run_interrupted', 'the iteration ends with the terminal');
  assert.equal((await s.result).cancelKind, 'caller');

  // Already aborted: nothing starts.
  const aborted = AbortSignal.abort(new Error('too late'));
  await assert.rejects(evolve.run({ prompt: 'x', signal: aborted }), /too late/);
  assert.throws(() => evolve.stream({ prompt: 'x', signal: aborted }), /too late/);
  assert.equal(evolve.activeRunId, undefined);
  await assert.rejects(evolve.run({ prompt: 'x', signal: 'stop' }), (e) => e instanceof InvalidArgumentError && /signal must be an AbortSignal/.test(e.message));
});

test('successive runs continue the conversation; setSession(null) starts fresh; resume picks another', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'agentstream-session-'));
  const argvFile = join(dir, 'argv.json');
  const resumes = () => JSON.parse(readFileSync(argvFile, 'utf8')).filter((a) => a.startsWith('--resume'));
  try {
    const evolve = fakeEvolve('claude', 's2-bash', { AGENTSTREAM_FAKE_ARGV_FILE: argvFile });
    const session = '66c0abf3-0bc5-46a7-8e73-4fef192280ea';
    assert.equal(evolve.getSession(), undefined);
    const hooks = [];
    const first = await evolve.run({ prompt: 'first', onEvent: (h) => void hooks.push(h.type) });
    assert.equal(first.sessionId, session);
    assert.equal(evolve.getSession(), session);
    assert.deepEqual(resumes(), []);
    assert.equal(hooks[0], 'run.started');
    hooks.length = 0;
    await evolve.run({ prompt: 'second', onEvent: (h) => void hooks.push(h.type) });
    assert.deepEqual(resumes(), [`--resume=${session}`]);
    assert.equal(hooks[0], 'run.resumed');
    const status = evolve.status();
    assert.deepEqual(
      { hasRun: status.hasRun, sessionId: status.sessionId, lastStatus: status.lastStatus, agent: status.agent, agentState: status.agentState },
      { hasRun: true, sessionId: session, lastStatus: 'completed', agent: 'claude', agentState: 'idle' },
    );
    assert.equal(status.activeRunId, undefined);
    evolve.setSession(null);
    assert.equal(evolve.getSession(), undefined);
    await evolve.run({ prompt: 'fresh' });
    assert.deepEqual(resumes(), []);
    await evolve.run({ prompt: 'elsewhere', resume: 'another-session', model: 'm-9' });
    assert.deepEqual(resumes(), ['--resume=another-session']);
    assert.throws(() => evolve.setSession('--help'), (e) => e instanceof InvalidArgumentError && /^sessionId must not start with '-'/.test(e.message));
    assert.throws(() => evolve.setSession(42), InvalidArgumentError);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('off(name) removes every handler of a channel, off(name, handler) one; an unknown name throws like on()', () => {
  const evolve = new Evolve({ config: { type: 'codex' } });
  const a = () => {};
  const b = () => {};
  evolve.on('stdout', a).on('stdout', b).on('stdout', a);
  assert.equal(evolve.listenerCount('stdout'), 3);
  evolve.off('stdout', a);
  assert.equal(evolve.listenerCount('stdout'), 1);
  evolve.off('stdout');
  assert.equal(evolve.listenerCount('stdout'), 0);
  for (const bad of ['message', 'hooks']) {
    assert.throws(() => evolve.off(bad), (e) => e instanceof InvalidArgumentError && e.message.includes('"content", "lifecycle", "stdout" and "stderr"'));
  }
});

test('Symbol.asyncDispose (await using) kills a run still going on and waits for it; the Evolve stays usable', async () => {
  assert.equal(typeof Symbol.asyncDispose, 'symbol');
  const evolve = fakeEvolve('claude', 's1-text', { AGENTSTREAM_FAKE_HANG: '1' });
  const running = evolve.run({ prompt: 'x', killGraceMs: 200 });
  await sleep(100);
  await evolve[Symbol.asyncDispose]();
  assert.equal(evolve.activeRunId, undefined, 'disposing waited for the run to end');
  assert.equal((await running).state, 'cancelled');
  const idle = new Evolve({ config: { type: 'claude' } });
  await idle[Symbol.asyncDispose](); // nothing to kill
  assert.equal(idle.status().hasRun, false);
});

test('return() while a next() is pending: nothing is yielded after it, and the handlers get the rest and one terminal', async () => {
  const evolve = fakeEvolve('claude', 's2-bash', { AGENTSTREAM_FAKE_DELAY_MS: '150' });
  const hooks = [];
  const stream = evolve.stream({ prompt: 'x', killGraceMs: 200, onEvent: (h) => hooks.push(h.type) });
  const it = stream[Symbol.asyncIterator]();
  let pending;
  for (;;) {
    // Until a next() has to wait for the harness's next line (the ones the queue held resolve at once).
    pending = it.next();
    const settled = await Promise.race([pending.then(() => true), new Promise((r) => setImmediate(() => r(false)))]);
    if (!settled) break;
    assert.equal((await pending).done, false);
  }
  await it.return();
  const got = await pending;
  assert.equal(got.done, true, `yielded after return(): ${JSON.stringify(got.value)}`);
  const result = await stream.result;
  assert.equal(result.state, 'cancelled');
  assert.equal(result.cancelKind, 'reader_left');
  const terminals = hooks.filter((t) => ['run.completed', 'run.failed', 'run.cancelled'].includes(t));
  assert.deepEqual(terminals, ['run.cancelled'], `hooks: ${hooks}`);
  assert.equal(hooks.at(-1), 'run.cancelled');
});

test('a handler returning an object whose then getter throws is not awaited and does not stop the run', async () => {
  const evolve = fakeEvolve('claude', 's1-text');
  let calls = 0;
  evolve.on('content', () => {
    calls++;
    return {
      get then() {
        throw new Error('not a promise after all');
      },
    };
  });
  const result = await evolve.run({ prompt: 'x' });
  assert.equal(result.state, 'completed');
  assert.ok(calls > 0);
});

test("close() from a run's own handler kills the run without waiting for it: at once, or after an await once Node has nothing else to do", () => {
  // In a program of its own, as for BUSY below: the wait after an await is broken at Node's
  // beforeExit, which the test runner would take first. Before, close() waited for its own run,
  // which never ended, and Node exited 13.
  for (const awaitFirst of [false, true]) {
    const program = `
      import { fakeEvolve } from ${JSON.stringify(new URL('./fake.mjs', import.meta.url).href)};
      const evolve = fakeEvolve('claude', 's1-text', { AGENTSTREAM_FAKE_HANG: '1' });
      let closed = false;
      let first = true;
      evolve.on('stdout', async () => {
        if (!first) return;
        first = false;
        if (${awaitFirst}) await new Promise((r) => setTimeout(r, 10)); // past the handler's synchronous part
        await evolve.close();
        closed = true;
      });
      const result = await evolve.run({ prompt: 'x', killGraceMs: 200 });
      console.log(JSON.stringify({ state: result.state, closed, active: evolve.activeRunId ?? null }));
    `;
    const out = execFileSync(process.execPath, ['--input-type=module', '-e', program], { encoding: 'utf8', timeout: 60_000 });
    const { state, closed, active } = JSON.parse(out.trim().split('\n').at(-1));
    assert.equal(closed, true, `close() returned inside the handler (awaitFirst: ${awaitFirst})`);
    assert.equal(state, 'cancelled');
    assert.equal(active, null);
  }
});

test("a run's own handler awaiting its result gets BUSY once Node has nothing else to do", () => {
  // In a program of its own: the test runner ends a test whose promise is pending when the
  // event loop empties (Node's beforeExit) before the library may break the wait.
  const program = `
    import { fakeEvolve } from ${JSON.stringify(new URL('./fake.mjs', import.meta.url).href)};
    const evolve = fakeEvolve('gemini', 's2-bash', { AGENTSTREAM_FAKE_DELAY_MS: '20' });
    let handle;
    const seen = [];
    evolve.on('content', async () => {
      if (handle === undefined) return;
      // From a handler of the same run: this await could never end.
      seen.push(await handle.result.then(() => 'resolved', (e) => e.code + ': ' + e.message));
    });
    handle = await evolve.run({ prompt: 'x', background: true });
    const result = await handle.result;
    console.log(JSON.stringify({ state: result.state, handlerErrors: result.handlerErrors, seen }));
  `;
  const out = execFileSync(process.execPath, ['--input-type=module', '-e', program], { encoding: 'utf8', timeout: 60_000 });
  const { state, seen } = JSON.parse(out.trim().split('\n').at(-1));
  assert.equal(state, 'completed');
  assert.ok(seen.length > 0, 'the handler asked');
  for (const e of seen) assert.match(e, /^BUSY: run \S+: its own handler waits for its result/);
});

test("a run's own handlers may use its result's promise without awaiting it", async () => {
  const evolve = fakeEvolve('gemini', 's2-bash', { AGENTSTREAM_FAKE_DELAY_MS: '20' });
  let handle;
  const states = [];
  evolve.on('content', () => {
    if (handle !== undefined) handle.result.then((r) => states.push(r.state));
  });
  evolve.on('content', async () => {
    if (handle !== undefined) handle.result.then((r) => states.push(r.state));
    await sleep(1);
  });
  handle = await evolve.run({ prompt: 'x', background: true });
  assert.equal((await handle.result).state, 'completed');
  await sleep(10);
  assert.ok(states.length > 1 && states.every((s) => s === 'completed'), String(states));
});
