// Run in a folder where the released npm packages are installed (packaging/install_test.sh):
// the platform package ships `agentstream-supervisor` beside the addon, executable, and a run's
// harness has that program as its parent (its command line), not a fork of Node. Exits
// non-zero, saying what was found, otherwise.
const { accessSync, constants } = require('node:fs');
const { createRequire } = require('node:module');
const { dirname, join } = require('node:path');

const fromHere = createRequire(join(process.cwd(), 'package.json'));
const { Evolve } = fromHere('agentstream');
const program = join(dirname(fromHere.resolve('agentstream-linux-x64-gnu/package.json')), 'agentstream-supervisor');
accessSync(program, constants.X_OK);

const evolve = new Evolve({ config: { type: 'claude' } });
let parent = '';
evolve.on('stdout', (text) => {
  parent += text;
});
evolve.executeCommand({ command: ['sh', '-c', "tr '\\0' ' ' < /proc/$PPID/cmdline"] }).then(() => {
  if (!parent.startsWith(`${program} --agentstream-supervisor-1`)) {
    console.error(`the harness's parent is not ${program}: ${parent}`);
    process.exit(1);
  }
  console.log(`the supervisor is ${program}`);
});
