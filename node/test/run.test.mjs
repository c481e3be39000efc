// Real runs through the Node API: the fake harness (a real child process) replays golden traces
// and can be told to fail, die mid-line, hang or flood. Mirrors cli/tests/runner.rs: lifecycle
// order, exactly one terminal, cancellation by `break`, throwing and async callbacks,
// pause/resume, a harness killed mid-line, a timeout, already-running, harness-not-found,
// commands, backpressure, a Rust panic, and a process that exits by itself when no run is active.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';

import { AgentStreamError, Evolve, HandlerWarning, InvalidArgumentError, __testPanicAsync, replay } from 'agentstream';

import { FAKE, checkEnvelopes, checkLog, fakeEvolve, golden, goldenCases, recorder, repo, sleep } from './fake.mjs';

const lines = (path) => readFileSync(path, 'utf8').split('\n').filter((l) => l.trim() !== '').map((l) => JSON.parse(l));

/** Collect the process warnings emitted while `f` runs. */
async function warningsDuring(f) {
  const seen = [];
  const listener = (w) => seen.push(w);
  process.on('warning', listener);
  try {
    const value = await f();
    await sleep(10); // emitWarning delivers on the next tick
    return { value, warnings: seen };
  } finally {
    process.off('warning', listener);
  }
}

test('run(): every golden trace through a real process gives exactly the expected content and hook events', async () => {
  const strip = ({ runId, timestamp, sequence, agentId, ...rest }) => rest;
  for (const c of goldenCases()) {
    const evolve = fakeEvolve(c.agent, c.name);
    const content = [];
    const hooks = [];
    evolve.on('content', (e) => void content.push(e));
    const result = await evolve.run({ prompt: 'x', onEvent: (h) => void hooks.push(h) });
    const where = `${c.agent}/${c.name}`;
    assert.deepEqual(content, lines(`${golden(c.agent, c.name)}.expected.jsonl`), `${where}: content`);
    // The golden hooks file is the canonical snake_case form; convert it here, independently.
    const camel = (k) => k.replace(/_([a-z0-9])/g, (_, x) => x.toUpperCase());
    const VERBATIM = new Set(['arguments', 'raw_output', 'output', 'result', 'extra', 'usage']);
    const camelKeys = (v) =>
      v !== null && typeof v === 'object' && !Array.isArray(v)
        ? Object.fromEntries(Object.entries(v).map(([k, x]) => [camel(k), VERBATIM.has(k) ? x : camelKeys(x)]))
        : v;
    const want = lines(`${golden(c.agent, c.name)}.hooks.jsonl`).map(({ details, ...top }) => ({ ...camelKeys(top), ...camelKeys(details) }));
    // Sequences differ from the replay (sandbox_ready, stderr lines interleave); the run id and clock too.
    assert.deepEqual(hooks.map(strip), want.map(strip), `${where}: hooks`);
    assert.ok(hooks.every((h) => h.runId === result.runId && h.agentId === c.agent), where);
    assert.equal(result.state, replay(c.agent, readFileSync(`${golden(c.agent, c.name)}.input.jsonl`)).outcome.state, where);
  }
});

test('run(): lifecycle order, stdout/stderr as printed, content after its line, one terminal, the result', async () => {
  const evolve = fakeEvolve('claude', 's2-bash');
  const envelopes = [];
  const { log, onEvent } = recorder(evolve);
  // A stream() and a run() of the same Evolve: the first operation announces sandbox_ready.
  const s = evolve.stream({ prompt: 'List the files', onEvent });
  for await (const e of s) envelopes.push(e);
  const result = await s.result;
  assert.equal(result.state, 'completed');
  const reasons = checkEnvelopes(envelopes);
  assert.deepEqual(reasons, ['sandbox_ready', 'run_start', 'run_complete']);
  assert.deepEqual(checkLog(log), reasons, 'the handlers saw the same lifecycle');
  assert.equal(result.runId, s.runId);
  assert.equal(result.lastSequence, envelopes[envelopes.length - 1].sequence);
  assert.equal(result.sessionId, '66c0abf3-0bc5-46a7-8e73-4fef192280ea');
  assert.ok(result.finalText && result.finalText.length > 0);
  assert.equal(result.exitCode, 0);
  assert.ok(result.usage.promptTokens > 0);
  assert.equal(typeof result.durationMs, 'number');
  assert.equal(result.stats.lines, 6);
  const text = (ch) => envelopes.filter((e) => e.channel === ch).map((e) => e.event).join('');
  assert.equal(text('stdout'), readFileSync(`${golden('claude', 's2-bash')}.input.jsonl`, 'utf8'));
  assert.equal(text('stderr'), readFileSync(`${golden('claude', 's2-bash')}.stderr.txt`, 'utf8'));
  for (let i = 0; i < envelopes.length; i++) {
    if (envelopes[i].channel === 'content') assert.ok(['stdout', 'content'].includes(envelopes[i - 1].channel), `content at ${i} follows its line`);
  }
  const lc = envelopes.find((e) => e.channel === 'lifecycle').event;
  assert.deepEqual(Object.keys(lc).sort(), ['agent', 'reason', 'sandbox', 'sandboxId', 'timestamp']);
  assert.equal(lc.sandboxId, null);
  // The handlers received exactly what the iterator yielded, in order, hooks interleaved.
  assert.deepEqual(log.filter((x) => x.channel !== 'hook').map((x) => x.event), envelopes.map((e) => e.event));

  log.length = 0;
  const again = await evolve.run({ prompt: 'again', onEvent });
  assert.equal(again.state, 'completed');
  assert.notEqual(again.runId, result.runId);
  assert.deepEqual(checkLog(log, { first: 'run.resumed' }), ['run_start', 'run_complete'], 'sandbox_ready only on the first operation; the second run continues the conversation');
  const hook = log.find((x) => x.channel === 'hook' && x.event.type === 'tool.started').event;
  for (const k of ['type', 'runId', 'agentId', 'timestamp', 'status', 'sequence', 'stepIndex', 'toolCallId', 'kind', 'title']) assert.ok(k in hook, k);
  assert.ok(Object.keys(hook).every((k) => !k.includes('_')), 'camelCase');
});

test('run(): without handlers the run is await-only and still resolves with the full result', async () => {
  const result = await fakeEvolve('codex', 's2-bash').run({ prompt: 'x' });
  assert.equal(result.state, 'completed');
  assert.ok(result.lastSequence > 5);
  assert.ok(result.finalText);
  assert.equal(result.pressure.peak, 0, 'nothing was buffered');
});

test('a non-zero exit resolves with state failed (not a rejection), no answer', async () => {
  const evolve = fakeEvolve('codex', 's1-text', { AGENTSTREAM_FAKE_EXIT: '3' });
  const { log, onEvent } = recorder(evolve);
  const result = await evolve.run({ prompt: 'x', onEvent });
  assert.equal(result.state, 'failed');
  assert.equal(result.exitCode, 3);
  assert.equal(result.finalText, undefined, 'partial text is never an answer');
  assert.ok(result.error);
  assert.equal(checkLog(log).at(-1), 'run_failed');
  assert.equal(log.at(-1).event.type, 'run.failed');
});

test('exit 0 without the harness\'s end-of-run record: failed, the answer so far kept', async () => {
  for (const agent of ['claude', 'codex', 'gemini', 'qwen', 'opencode', 'droid']) {
    const evolve = fakeEvolve(agent, 'e-no-final-result', { AGENTSTREAM_FAKE_EXIT: '0' });
    const { log, onEvent } = recorder(evolve);
    const result = await evolve.run({ prompt: 'x', onEvent });
    assert.equal(result.state, 'failed', agent);
    assert.equal(result.exitCode, 0, agent);
    assert.match(result.error, /stopped without its final result/, agent);
    assert.ok(result.finalText, `${agent}: the partial answer stays in the result`);
    assert.equal(checkLog(log).at(-1), 'run_failed', agent);
    assert.equal(log.at(-1).event.type, 'run.failed', agent);
  }
});

test('a harness killed mid-line: the partial last line is decoded before the terminal; failed, signal 9', async () => {
  const evolve = fakeEvolve('gemini', 's1-text', { AGENTSTREAM_FAKE_DIE_MID_LINE: '1' });
  const envelopes = [];
  const s = evolve.stream({ prompt: 'x' });
  for await (const e of s) envelopes.push(e);
  const result = await s.result;
  assert.equal(result.state, 'failed');
  assert.equal(result.signal, 9);
  assert.equal(checkEnvelopes(envelopes).at(-1), 'run_failed');
  const lastStdout = envelopes.filter((e) => e.channel === 'stdout').at(-1).event;
  assert.ok(lastStdout.startsWith('{"type":"result"'), lastStdout);
});

test('for await … break cancels the run through the one path (reader_left); handlers still see one terminal', async () => {
  const evolve = fakeEvolve('claude', 's1-text', { AGENTSTREAM_FAKE_HANG: '1' });
  const { log, onEvent } = recorder(evolve);
  const s = evolve.stream({ prompt: 'x', onEvent, killGraceMs: 200 });
  let seen = 0;
  for await (const e of s) {
    seen++;
    if (e.channel === 'content') break;
  }
  assert.ok(seen > 0);
  const result = await s.result;
  assert.equal(result.state, 'cancelled');
  assert.equal(result.cancelKind, 'reader_left');
  assert.match(result.cancelReason, /read/);
  assert.equal(checkLog(log).at(-1), 'run_interrupted');
  assert.equal(log.at(-1).event.type, 'run.cancelled');
  assert.equal(evolve.activeRunId, undefined);
  // A break after the terminal envelope cancels nothing.
  const done = fakeEvolve('claude', 's1-text').stream({ prompt: 'x' });
  for await (const e of done) if (e.channel === 'lifecycle' && e.event.reason === 'run_complete') break;
  assert.equal((await done.result).state, 'completed');
});

test('a throw inside for await also cancels; cancel() ends the iteration with the terminal envelope', async () => {
  const evolve = fakeEvolve('claude', 's1-text', { AGENTSTREAM_FAKE_HANG: '1' });
  const s = evolve.stream({ prompt: 'x', killGraceMs: 200 });
  await assert.rejects(
    (async () => {
      for await (const e of s) if (e.sequence === 2) throw new Error('mine');
    })(),
    /mine/,
  );
  assert.equal((await s.result).cancelKind, 'reader_left');

  const c = evolve.stream({ prompt: 'x', killGraceMs: 200 });
  const envelopes = [];
  for await (const e of c) {
    envelopes.push(e);
    if (e.sequence === 1) c.cancel('the client pressed stop');
  }
  assert.equal(checkEnvelopes(envelopes).at(-1), 'run_interrupted');
  const result = await c.result;
  assert.equal(result.cancelKind, 'caller');
  assert.match(result.cancelReason, /the client pressed stop/);
});

test('a throwing or rejecting handler is reported once per handler, with its event and stack, counted, and the run goes on', async () => {
  const evolve = fakeEvolve('qwen', 's3-read-edit');
  const content = [];
  evolve.on('content', () => {
    throw new Error('content handler broke');
  });
  evolve.on('content', (e) => void content.push(e)); // later handlers of the same event still run
  let lifecycleCalls = 0;
  evolve.on('lifecycle', async () => {
    lifecycleCalls++;
    if (lifecycleCalls === 2) throw new RangeError('async lifecycle handler broke');
  });
  const hooks = [];
  const { value: result, warnings } = await warningsDuring(() =>
    evolve.run({
      prompt: 'x',
      onEvent: (h) => {
        hooks.push(h);
        if (h.type === 'run.started') throw new TypeError('hook handler broke');
      },
    }),
  );
  assert.equal(result.state, 'completed');
  const mine = warnings.filter((w) => w instanceof HandlerWarning);
  assert.equal(mine.length, 3, 'one warning per failing handler');
  assert.equal(result.handlerErrors, content.length + 2, 'every failure is counted');
  const byChannel = (ch) => mine.filter((w) => w.channel === ch);
  assert.equal(byChannel('content').length, 1);
  assert.deepEqual(byChannel('content')[0].event, content[0], 'the warning carries the event it failed on');
  assert.ok(byChannel('content').every((w) => w.cause.message === 'content handler broke' && w.runId === result.runId));
  assert.match(byChannel('content')[0].detail, /content handler broke\n\s+at /, 'the handler\'s stack');
  assert.equal(byChannel('lifecycle').length, 1);
  assert.equal(byChannel('lifecycle')[0].event.reason, 'run_start');
  assert.ok(byChannel('lifecycle')[0].cause instanceof RangeError);
  assert.equal(byChannel('onEvent').length, 1);
  assert.equal(byChannel('onEvent')[0].event.type, 'run.started');
  assert.equal(mine[0].code, 'AGENTSTREAM_HANDLER_FAILED');
  assert.equal(mine[0].name, 'AgentStreamHandlerWarning');
  assert.match(mine[0].message, /handler failed on sequence \d+ of run run_/);
  assert.equal(hooks.at(-1).type, 'run.completed', 'the hook handler kept receiving events');
  assert.equal(lifecycleCalls, 3);
});

test('a thrown value whose message cannot be read is counted and the run goes on', async () => {
  const evolve = fakeEvolve('claude', 's2-bash');
  let calls = 0;
  evolve.on('content', () => {
    calls += 1;
    throw Object.create(null); // String() of it throws a TypeError
  });
  const unreadable = new Error('x');
  Object.defineProperty(unreadable, 'message', { get() { throw new Error('no message'); } });
  evolve.on('stdout', () => {
    throw unreadable;
  });
  const { value: result, warnings } = await warningsDuring(() => evolve.run({ prompt: 'x' }));
  // Before, describing what was thrown threw, and the run was cancelled (rejected).
  assert.equal(result.state, 'completed');
  assert.equal(result.handlerErrors, calls + lines(`${golden('claude', 's2-bash')}.input.jsonl`).length);
  const mine = warnings.filter((w) => w instanceof HandlerWarning);
  assert.equal(mine.length, 2);
  assert.ok(mine.every((w) => /its message could not be read/.test(w.message)), mine.map((w) => w.message).join('; '));
});

test('async handlers are awaited in order: nothing is delivered while one is pending', async () => {
  const evolve = fakeEvolve('claude', 's2-bash');
  const order = [];
  let pending = false;
  const enter = (what) => {
    assert.equal(pending, false, `${what} delivered while an async handler was pending`);
    order.push(what);
  };
  evolve.on('stdout', () => enter('stdout'));
  evolve.on('content', async (e) => {
    enter(`content:${e.update.sessionUpdate}`);
    pending = true;
    await sleep(2);
    pending = false;
  });
  const result = await evolve.run({
    prompt: 'x',
    onEvent: async (h) => {
      enter(`hook:${h.type}`);
      pending = true;
      await new Promise((r) => setImmediate(r));
      pending = false;
    },
  });
  assert.equal(result.state, 'completed');
  assert.equal(order.filter((x) => x.startsWith('content:')).length, 8);
  assert.equal(order.at(-1), 'hook:run.completed');
  assert.equal(order[0], 'hook:run.started');
});

test('pause() stops the process (no output while paused) and resume() continues it', async () => {
  const evolve = fakeEvolve('gemini', 's2-bash', { AGENTSTREAM_FAKE_DELAY_MS: '60' });
  const log = [];
  evolve.on('stdout', () => void log.push({ channel: 'stdout', at: performance.now() }));
  evolve.on('lifecycle', (e) => void log.push({ channel: 'lifecycle', reason: e.reason, at: performance.now() }));
  const running = evolve.run({ prompt: 'x' });
  await sleep(150);
  await evolve.pause();
  await evolve.pause(); // idempotent
  const pausedAt = performance.now();
  await sleep(400);
  const resumedAt = performance.now();
  await evolve.resume();
  const result = await running;
  assert.equal(result.state, 'completed');
  const reasons = log.filter((x) => x.channel === 'lifecycle').map((x) => x.reason);
  assert.deepEqual(reasons, ['sandbox_ready', 'run_start', 'sandbox_pause', 'sandbox_resume', 'run_complete']);
  const during = log.filter((x) => x.channel === 'stdout' && x.at > pausedAt + 100 && x.at < resumedAt);
  assert.deepEqual(during, [], 'no output while paused');
  assert.ok(log.some((x) => x.channel === 'stdout' && x.at > resumedAt), 'output after resume');
  await assert.rejects(evolve.pause(), (e) => e instanceof AgentStreamError && e.code === 'NOT_RUNNING');
  await assert.rejects(evolve.resume(), { code: 'NOT_RUNNING' });
  assert.equal(evolve.interrupt(), false, 'nothing to interrupt is not an error');
  assert.equal(evolve.kill(), false, 'nothing to kill');
});

test('a timeout stops the run: cancelled (timeout), hook run.stopped, lifecycle run_interrupted', async () => {
  const evolve = fakeEvolve('claude', 's1-text', { AGENTSTREAM_FAKE_HANG: '1' });
  const { log, onEvent } = recorder(evolve);
  const started = performance.now();
  const result = await evolve.run({ prompt: 'x', onEvent, timeoutMs: 400, killGraceMs: 200 });
  assert.ok(performance.now() - started >= 350);
  assert.equal(result.state, 'cancelled');
  assert.equal(result.cancelKind, 'timeout');
  assert.equal(log.at(-1).event.type, 'run.stopped');
  assert.equal(checkLog(log).at(-1), 'run_interrupted');
});

test('interrupt() ends the run cancelled with its reason; SIGKILL when SIGTERM is ignored', async () => {
  const evolve = fakeEvolve('claude', 's1-text', { AGENTSTREAM_FAKE_HANG: '1', AGENTSTREAM_FAKE_IGNORE_SIGTERM: '1' });
  const { log, onEvent } = recorder(evolve);
  const running = evolve.run({ prompt: 'x', onEvent, killGraceMs: 300 });
  await sleep(200);
  assert.equal(evolve.interrupt('the user pressed stop'), true);
  const result = await running;
  assert.equal(result.state, 'cancelled');
  assert.equal(result.cancelKind, 'caller');
  assert.match(result.cancelReason, /the user pressed stop/);
  assert.equal(result.signal, 9);
  assert.equal(log.at(-1).event.type, 'run.cancelled');
});

test('one operation at a time: ALREADY_RUNNING rejects; kill() ends the active run; a missing harness rejects', async () => {
  const evolve = fakeEvolve('claude', 's1-text', { AGENTSTREAM_FAKE_HANG: '1' });
  const { log, onEvent } = recorder(evolve);
  const running = evolve.run({ prompt: 'x', onEvent });
  assert.match(evolve.activeRunId, /^run_/);
  const busy = (e) => e instanceof AgentStreamError && e.code === 'ALREADY_RUNNING' && e.kind === 'already_running' && /already running/.test(e.message);
  await assert.rejects(evolve.run({ prompt: 'y' }), busy);
  await assert.rejects(evolve.executeCommand({ command: 'true' }), busy);
  assert.throws(() => evolve.stream({ prompt: 'y' }), busy);
  await sleep(50);
  assert.equal(evolve.kill(), true);
  const result = await running;
  assert.equal(result.state, 'cancelled');
  const reasons = checkLog(log);
  assert.ok(reasons.includes('sandbox_killed'), reasons);
  assert.equal(reasons.at(-1), 'run_interrupted');

  const missing = new Evolve({ config: { type: 'codex', bin: '/nonexistent/codex-not-installed' } });
  await assert.rejects(missing.run({ prompt: 'x' }), (e) => {
    assert.ok(e instanceof AgentStreamError);
    assert.equal(e.code, 'HARNESS_NOT_FOUND');
    assert.equal(e.numericCode, 1001);
    assert.match(e.message, /not found/);
    return true;
  });
  assert.throws(() => missing.stream({ prompt: 'x' }), { code: 'HARNESS_NOT_FOUND' });
  assert.equal(missing.activeRunId, undefined);
});

test('executeCommand(): any command streams with the command lifecycle and is not decoded', async () => {
  const evolve = new Evolve({ config: { type: 'claude' } });
  const { log, onEvent } = recorder(evolve);
  const result = await evolve.executeCommand({ command: "echo one; echo oops >&2; printf 'two'; exit 4", onEvent });
  assert.equal(result.state, 'failed');
  assert.equal(result.exitCode, 4);
  assert.deepEqual(checkLog(log), ['sandbox_ready', 'command_start', 'command_failed']);
  const text = (ch) => log.filter((x) => x.channel === ch).map((x) => x.event).join('');
  assert.equal(text('stdout'), 'one\ntwo\n');
  assert.equal(text('stderr'), 'oops\n');
  assert.ok(!log.some((x) => x.channel === 'content'), 'commands are not decoded');

  log.length = 0;
  const argv = await evolve.executeCommand({ command: ['sh', '-c', 'echo "$GREETING" from $PWD'], env: { GREETING: 'hi' }, cwd: '/tmp', onEvent });
  assert.equal(argv.state, 'completed');
  assert.equal(log.filter((x) => x.channel === 'stdout').map((x) => x.event).join(''), 'hi from /tmp\n');
  assert.equal(log.at(-1).event.type, 'run.completed');
  await assert.rejects(evolve.executeCommand({ command: '  ' }), InvalidArgumentError);
  await assert.rejects(evolve.executeCommand({ command: [] }), InvalidArgumentError);
});

test('backpressure: a flood into a slow reader coalesces text without losing a character', async () => {
  const evolve = fakeEvolve('claude', 's1-text', { AGENTSTREAM_FAKE_FLOOD: '20000' });
  const s = evolve.stream({ prompt: 'x', limits: { highWater: 16 } });
  await sleep(500); // let the flood pile up unread
  assert.ok(s.pressure.buffered > 0);
  const envelopes = [];
  for await (const e of s) envelopes.push(e);
  const result = await s.result;
  assert.equal(result.state, 'completed');
  checkEnvelopes(envelopes);
  let expected = readFileSync(`${golden('claude', 's1-text')}.input.jsonl`, 'utf8');
  for (let i = 0; i < 20000; i++) expected += `{"type":"flood","n":${i}}\n`;
  const stdout = envelopes.filter((e) => e.channel === 'stdout').map((e) => e.event).join('');
  assert.equal(stdout.length, expected.length);
  assert.equal(stdout, expected);
  assert.ok(result.pressure.coalesced > 0, JSON.stringify(result.pressure));
  assert.equal(envelopes.reduce((n, e) => n + (e.coalesced ?? 0), 0), result.pressure.coalesced);
});

test('bad options are TypeErrors (INVALID_ARGUMENT) with the core message', async () => {
  const evolve = fakeEvolve('claude', 's1-text');
  await assert.rejects(evolve.run({}), InvalidArgumentError);
  await assert.rejects(evolve.run({ prompt: 'x', timeoutMs: '5s' }), /timeoutMs must be a number/);
  await assert.rejects(evolve.run({ prompt: 'x', timeout: 5 }), (e) => e instanceof InvalidArgumentError && /unknown option "timeout"/.test(e.message) && /timeoutMs/.test(e.message));
  await assert.rejects(evolve.run({ prompt: 'x', timeoutMs: 0 }), (e) => e.code === 'INVALID_ARGUMENT' && /^timeoutMs must be a number of milliseconds from 1/.test(e.message));
  await assert.rejects(evolve.run({ prompt: 'x', resume: '-x' }), /^TypeError: resume must not start with '-'|resume must not start/);
  await assert.rejects(evolve.run({ prompt: 'x', env: { 'A=B': '1' } }), /env has an invalid variable name "A=B"/);
  await assert.rejects(evolve.run({ prompt: 'x', limits: { stallMs: 0 } }), /^TypeError: limits\.stallMs|limits\.stallMs must be/);
  await assert.rejects(evolve.run({ prompt: 'x', onEvent: 'nope' }), /onEvent must be a function/);
  await assert.rejects(evolve.run({ prompt: 'x', limits: { byteBudget: 0 } }), (e) => e instanceof TypeError && e.code === 'INVALID_ARGUMENT' && /^limits\.byteBudget must be greater than 0/.test(e.message));
  await assert.rejects(evolve.run({ prompt: 'x', timeoutMs: -1 }), { code: 'INVALID_ARGUMENT' });
  await assert.rejects(evolve.executeCommand({ command: '  ' }), /^TypeError: command must not be blank|command must not be blank/);
  assert.throws(() => new Evolve({ config: { type: 'claude', env: { A: 1 } } }), /config.env.A must be a string/);
  assert.throws(() => new Evolve({ config: { type: 'claude', extraArgs: 'x' } }), InvalidArgumentError);
  assert.throws(() => new Evolve({ config: { type: 'nope' } }), /claude/);
  assert.equal(evolve.activeRunId, undefined, 'nothing started');
});

test('a Rust panic on the runner becomes a rejected promise with an INTERNAL error', async () => {
  await assert.rejects(__testPanicAsync('boom in a task'), (e) => e instanceof AgentStreamError && e.code === 'INTERNAL' && /boom in a task/.test(e.message));
  assert.equal(await __testPanicAsync(''), '');
});

/** Run a script in a fresh node; it must exit by itself (no dangling handle) well before `limit`. */
function nodeExits(script, limit = 20000) {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--input-type=module', '-e', script], { cwd: repo, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stdout.on('data', (d) => (out += d));
    child.stderr.on('data', (d) => (err += d));
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`node did not exit by itself within ${limit} ms; stdout: ${out}; stderr: ${err}`));
    }, limit);
    child.on('exit', (code, signal) => {
      clearTimeout(timer);
      resolve({ code, signal, out, err });
    });
  });
}

test('the process exits by itself once no run is active (run, stream, break, await-only)', async () => {
  const env = (name, extra = '') => `{ AGENTSTREAM_FAKE_TRACE: ${JSON.stringify(golden('claude', name))}${extra} }`;
  const script = `
    import { Evolve } from 'agentstream';
    const mk = (env) => new Evolve({ config: { type: 'claude', bin: ${JSON.stringify(FAKE)}, env } });
    const a = mk(${env('s1-text')});
    a.on('content', () => {});
    const r1 = await a.run({ prompt: 'x', onEvent: () => {} });
    const r2 = await mk(${env('s1-text')}).run({ prompt: 'x' });
    const s = mk(${env('s1-text', ", AGENTSTREAM_FAKE_HANG: '1'")}).stream({ prompt: 'x', killGraceMs: 200 });
    for await (const e of s) break;
    const r3 = await s.result;
    console.log(JSON.stringify([r1.state, r2.state, r3.state]));
  `;
  const started = performance.now();
  const { code, signal, out, err } = await nodeExits(script);
  assert.equal(signal, null, err);
  assert.equal(code, 0, err);
  assert.deepEqual(JSON.parse(out), ['completed', 'completed', 'cancelled']);
  assert.ok(performance.now() - started < 10000);
});

test('a run keeps the process alive until it ends, even when nobody awaits it', async () => {
  const script = `
    import { Evolve } from 'agentstream';
    const e = new Evolve({ config: { type: 'gemini', bin: ${JSON.stringify(FAKE)},
      env: { AGENTSTREAM_FAKE_TRACE: ${JSON.stringify(golden('gemini', 's2-bash'))}, AGENTSTREAM_FAKE_DELAY_MS: '50' } } });
    e.on('lifecycle', (l) => { if (l.reason === 'run_complete') console.log('complete'); });
    e.run({ prompt: 'x' });
  `;
  const { code, out, err } = await nodeExits(script);
  assert.equal(code, 0, err);
  assert.equal(out.trim(), 'complete');
});

test('a quiet harness keeps the process alive and loses nothing: waits that wake empty wait again', async () => {
  // 0.7 s between lines: longer than the core's recheck (250 ms), so a pending pull wakes with
  // nothing to take (nextBatch settles undefined) and the reader waits again.
  const script = `
    import { Evolve } from 'agentstream';
    const e = new Evolve({ config: { type: 'claude' } });
    const lines = [];
    e.on('stdout', (line) => lines.push(line));
    e.executeCommand({ command: 'echo one; sleep 0.7; echo two; sleep 0.3; echo three' })
      .then((r) => console.log(JSON.stringify([r.state, lines])));
  `;
  const { code, out, err } = await nodeExits(script);
  assert.equal(code, 0, err);
  assert.deepEqual(JSON.parse(out), ['completed', ['one\n', 'two\n', 'three\n']]);
});
