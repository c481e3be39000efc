// Shared by the real-run tests (not a test itself): the fake harness (target/release/fake-harness,
// built on first use when missing, as `make test-node` builds it), golden trace paths, and the
// stream invariants every run must satisfy.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

import { Evolve } from 'agentstream';

export const repo = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
export const goldenRoot = join(repo, 'tests', 'golden');
const targetDir = process.env.CARGO_TARGET_DIR ? resolve(repo, process.env.CARGO_TARGET_DIR) : join(repo, 'target');

/** The fake harness binary; built (release, the shared target dir) when it is not there yet. */
export const FAKE = (() => {
  const bin = join(targetDir, 'release', 'fake-harness');
  if (!existsSync(bin)) {
    execFileSync('cargo', ['build', '--release', '-p', 'agentstream-cli', '--bins'], { cwd: repo, stdio: 'inherit' });
  }
  assert.ok(existsSync(bin), `${bin} missing: run cargo build --release -p agentstream-cli --bins`);
  return bin;
})();

/** The trace prefix of a golden case. */
export function golden(agent, name) {
  return join(goldenRoot, agent, name);
}

/** Every golden (agent, case), sorted. */
export function goldenCases() {
  const out = [];
  for (const agent of readdirSync(goldenRoot, { withFileTypes: true })) {
    if (!agent.isDirectory()) continue;
    for (const file of readdirSync(join(goldenRoot, agent.name)).sort()) {
      const m = /^(.*)\.input\.jsonl$/.exec(file);
      if (m) out.push({ agent: agent.name, name: m[1] });
    }
  }
  return out;
}

/** An Evolve whose harness is the fake one replaying `agent/name`, with extra AGENTSTREAM_FAKE_* env. */
export function fakeEvolve(agent, name, env = {}, config = {}) {
  return new Evolve({
    config: { type: agent, bin: FAKE, env: { AGENTSTREAM_FAKE_TRACE: golden(agent, name), ...env }, ...config },
  });
}

/** Records everything the four channels and onEvent receive, in one ordered log. */
export function recorder(evolve) {
  const log = [];
  for (const channel of ['content', 'lifecycle', 'stdout', 'stderr']) {
    evolve.on(channel, (event) => {
      log.push({ channel, event });
    });
  }
  return { log, onEvent: (hook) => void log.push({ channel: 'hook', event: hook }) };
}

export const TERMINAL = new Set([
  'run_complete', 'run_failed', 'run_interrupted', 'run_background_complete', 'run_background_failed',
  'command_complete', 'command_failed', 'command_interrupted', 'command_background_complete', 'command_background_failed',
]);
const TERMINAL_HOOKS = new Set(['run.completed', 'run.failed', 'run.cancelled', 'run.stopped']);

/**
 * The stream invariants of envelopes (in delivery order): gapless sequence from 0 (a coalesced
 * envelope accounts for its merged numbers), one run id, exactly one terminal lifecycle event
 * and it is last. Returns the lifecycle reasons.
 */
export function checkEnvelopes(envelopes) {
  assert.ok(envelopes.length > 0, 'envelopes');
  let next = 0;
  for (const e of envelopes) {
    assert.equal(e.sequence, next, `gapless at ${next}`);
    assert.equal(e.runId, envelopes[0].runId);
    assert.deepEqual(Object.keys(e).filter((k) => !['runId', 'sequence', 'channel', 'event', 'coalesced'].includes(k)), []);
    next = e.sequence + 1 + (e.coalesced ?? 0);
  }
  const reasons = envelopes.filter((e) => e.channel === 'lifecycle').map((e) => e.event.reason);
  assert.equal(reasons.filter((r) => TERMINAL.has(r)).length, 1, `exactly one terminal: ${reasons}`);
  const last = envelopes[envelopes.length - 1];
  assert.ok(last.channel === 'lifecycle' && TERMINAL.has(last.event.reason), 'the terminal is last');
  return reasons;
}

/** The handler-view invariants of a recorder log: one terminal lifecycle event, then only its hooks; one terminal hook, last; `first` the first hook (`run.resumed` when a run continues a conversation). */
export function checkLog(log, { hooks = true, first = 'run.started' } = {}) {
  const at = log.findIndex((x) => x.channel === 'lifecycle' && TERMINAL.has(x.event.reason));
  assert.ok(at >= 0, 'a terminal lifecycle event');
  assert.ok(log.slice(at + 1).every((x) => x.channel === 'hook'), 'nothing but hooks after the terminal event');
  const hookTypes = log.filter((x) => x.channel === 'hook').map((x) => x.event.type);
  if (hooks) {
    assert.equal(hookTypes.filter((t) => TERMINAL_HOOKS.has(t)).length, 1, `one terminal hook: ${hookTypes}`);
    assert.ok(TERMINAL_HOOKS.has(hookTypes[hookTypes.length - 1]), 'the terminal hook is last');
    assert.equal(hookTypes[0], first);
    const seqs = log.filter((x) => x.channel === 'hook').map((x) => x.event.sequence);
    assert.deepEqual(seqs, [...seqs].sort((a, b) => a - b), 'hooks in sequence order');
  }
  return log.filter((x) => x.channel === 'lifecycle').map((x) => x.event.reason);
}

export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
