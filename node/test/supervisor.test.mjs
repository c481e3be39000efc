// A run's supervisor is the `agentstream-supervisor` program the platform package ships beside
// the addon (the core finds it there), not a fork of this Node process, which would copy its
// page tables on every run (a big process pays per run; docs/benchmarks.md). The harness reads
// its parent's command line from /proc.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { accessSync, constants } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';

const require = createRequire(import.meta.url);
const addonDir = dirname(require.resolve('agentstream/package.json'));
const PROGRAM = join(addonDir, 'native', 'agentstream-supervisor');

const SHOW_PARENT = `
const { Evolve } = require('agentstream');
const evolve = new Evolve({ config: { type: 'claude' } });
let out = '';
evolve.on('stdout', (text) => { out += text; });
evolve.executeCommand({ command: ['sh', '-c', "tr '\\\\0\\\\n' '  ' < /proc/$PPID/cmdline; echo; cat /proc/$PPID/comm"] })
  .then(() => process.stdout.write(out));
`;

/** The harness's parent's command line and name, as the harness reads them. */
function parentOfHarness(env = {}) {
  const out = execFileSync(process.execPath, ['-e', SHOW_PARENT], { env: { ...process.env, ...env }, encoding: 'utf8', timeout: 60_000 });
  return out.split('\n');
}

test('the supervisor program is shipped beside the addon, executable', () => {
  accessSync(PROGRAM, constants.X_OK);
});

test("a run's harness runs under the shipped program, not a fork of Node", () => {
  const [cmdline, name] = parentOfHarness();
  assert.ok(cmdline.startsWith(`${PROGRAM} --agentstream-supervisor-1`), cmdline);
  assert.equal(name, 'agentstream-sup');
});

test('AGENTSTREAM_SUPERVISOR=fork asks for a forked supervisor', () => {
  const [cmdline, name] = parentOfHarness({ AGENTSTREAM_SUPERVISOR: 'fork' });
  assert.ok(cmdline.startsWith(`${process.execPath} -e `) && !cmdline.includes('--agentstream-supervisor-1'), cmdline);
  assert.equal(name, 'agentstream-sup');
});

test('started by hand, the program says what it is', () => {
  const done = spawnSync(PROGRAM, [], { encoding: 'utf8' });
  assert.equal(done.status, 2);
  assert.match(done.stderr, /only supervises a run that agentstream starts/);
});
