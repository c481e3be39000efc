// Nothing of a run's process tree outlives the Node process that started it (issue 24, item 2):
// when the process exits (process.exit) while a run is active, or is killed with SIGKILL, the
// harness, a child in its process group and a child that left it (setsid) are all gone. Processes
// are counted by a marker in their environment (/proc/<pid>/environ), unique per test.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { readFileSync, readdirSync } from 'node:fs';
import { once } from 'node:events';

import { FAKE, golden, repo, sleep } from './fake.mjs';

const MARK = 'AGENTSTREAM_TEST_MARK';

function marked(mark) {
  const needle = `${MARK}=${mark}`;
  const out = [];
  for (const pid of readdirSync('/proc')) {
    if (!/^\d+$/.test(pid)) continue;
    try {
      if (readFileSync(`/proc/${pid}/environ`, 'latin1').split('\0').includes(needle)) out.push(Number(pid));
    } catch {
      // gone, or not ours to read
    }
  }
  return out;
}

const HOST = `
const { Evolve } = require('agentstream');
const [fake, trace, mark] = process.argv.slice(1);
const env = { AGENTSTREAM_FAKE_TRACE: trace, AGENTSTREAM_FAKE_HANG: '1', AGENTSTREAM_FAKE_CHILDREN: '1', ${MARK}: mark };
const evolve = new Evolve({ config: { type: 'claude', bin: fake, env } });
evolve.run({ prompt: 'x' }).catch(() => {});
process.stdin.once('data', (d) => (String(d).startsWith('exit') ? process.exit(0) : undefined));
console.log('started');
`;

for (const end of ['process.exit', 'SIGKILL']) {
  test(`no process outlives the Node host: ${end}`, { skip: process.platform !== 'linux' }, async () => {
    const mark = `node-${end}-${process.pid}-${Date.now()}`;
    const host = spawn(process.execPath, ['-e', HOST, FAKE, golden('claude', 's1-text'), mark], {
      cwd: repo,
      stdio: ['pipe', 'pipe', 'inherit'],
    });
    try {
      await once(host.stdout, 'data');
      const deadline = Date.now() + 20_000;
      while (marked(mark).length < 3) {
        assert.ok(Date.now() < deadline, 'the harness and its two children run');
        await sleep(20);
      }
      const exited = once(host, 'exit');
      if (end === 'SIGKILL') host.kill('SIGKILL');
      else host.stdin.write('exit\n');
      await exited;
      const until = Date.now() + 10_000;
      let left = marked(mark);
      while (left.length > 0 && Date.now() < until) {
        await sleep(20);
        left = marked(mark);
      }
      assert.deepEqual(left, [], `after ${end}: processes left behind`);
    } finally {
      if (host.exitCode === null && host.signalCode === null) host.kill('SIGKILL');
    }
  });
}
