// The API parity table (tests/parity/api.json, see its README) run against the Node API: the same
// cases every language's suite runs against its own idiom (Rust: cli/tests/parity.rs). Calls map
// to camelCase methods (`getSession`, `setSession`), run options to camelCase keys (`timeoutMs`),
// results and status to their camelCase fields.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { AgentStreamError, Evolve, InvalidArgumentError } from 'agentstream';

import { FAKE, golden, repo } from './fake.mjs';

const table = JSON.parse(readFileSync(join(repo, 'tests', 'parity', 'api.json'), 'utf8'));

const camel = (k) => k.replace(/_([a-z0-9])/g, (_, x) => x.toUpperCase());

/** Snake_case keys of the table (config, request, expectations) in TypeScript's spelling. */
function camelKeys(value) {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return value;
  return Object.fromEntries(Object.entries(value).map(([k, v]) => [camel(k), k === 'env' ? v : camelKeys(v)]));
}

/** Every key of `expected` matches in `got` (`null` = absent or null). */
function assertMatches(expected, got, what) {
  if (expected !== null && typeof expected === 'object' && !Array.isArray(expected)) {
    for (const [k, v] of Object.entries(expected)) assertMatches(v, got?.[camel(k)], `${what}.${k}`);
  } else if (expected === null) {
    assert.ok(got === null || got === undefined, `${what}: ${JSON.stringify(got)} is not absent`);
  } else {
    assert.deepEqual(got, expected, what);
  }
}

const containsRun = (argv, needle) => argv.some((_, i) => needle.every((n, j) => argv[i + j] === n));

class Case {
  constructor(argvFile) {
    this.argvFile = argvFile;
    this.evolve = undefined;
    this.handlerCalls = 0;
  }

  client() {
    assert.ok(this.evolve, 'the case built a client');
    return this.evolve;
  }

  create(config, harness) {
    const c = camelKeys(config);
    if (harness !== undefined) {
      c.bin = FAKE;
      c.env = { ...(c.env ?? {}), AGENTSTREAM_FAKE_TRACE: golden(...harness.split('/')), AGENTSTREAM_FAKE_ARGV_FILE: this.argvFile };
    }
    this.evolve = new Evolve({ config: c });
  }

  handler(kind) {
    return () => {
      this.handlerCalls++;
      if (kind === 'throw') throw new Error('a throwing handler');
    };
  }

  async run(step) {
    const hooks = [];
    const options = camelKeys(step.request ?? {});
    if (step.on_event) options.onEvent = (h) => void hooks.push(h.type);
    const result = await this.client().run(options);
    if (step.hooks_first !== undefined) assert.equal(hooks[0], step.hooks_first, JSON.stringify(hooks));
    return result;
  }

  async call(step) {
    switch (step.call) {
      case 'new':
        return this.create(step.config);
      case 'on':
        return this.client().on(step.channel, this.handler(step.handler ?? 'record'));
      case 'off':
        return this.client().off(step.channel);
      case 'run':
        return this.run(step);
      case 'status':
        return this.client().status();
      case 'get_session':
        return this.client().getSession();
      case 'set_session':
        return this.client().setSession(step.session_id);
      case 'interrupt':
        return this.client().interrupt('parity');
      case 'kill':
        return this.client().kill();
      case 'pause':
        return this.client().pause();
      case 'resume':
        return this.client().resume();
      case 'argv':
        return JSON.parse(readFileSync(this.argvFile, 'utf8'));
      default:
        assert.fail(`the parity table names a call this runner does not know: ${step.call}`);
    }
  }
}

for (const spec of table.cases) {
  test(`parity: ${spec.name}`, async () => {
    const dir = mkdtempSync(join(tmpdir(), 'agentstream-parity-'));
    try {
      const c = new Case(join(dir, 'argv.json'));
      if (spec.config !== undefined) c.create(spec.config, spec.harness);
      for (const step of spec.steps) {
        const what = `${spec.name} / ${step.call}`;
        const before = c.handlerCalls;
        let value;
        try {
          value = await c.call(step);
        } catch (e) {
          assert.ok(e instanceof AgentStreamError || e instanceof InvalidArgumentError, `${what}: ${e}`);
          assert.equal(e.kind, step.error, `${what}: unexpected error ${e}`);
          for (const needle of step.message_has ?? []) assert.ok(e.message.includes(needle), `${what}: ${needle} not in ${e.message}`);
          continue;
        }
        assert.equal(step.error, undefined, `${what}: expected a ${step.error} error, got ${JSON.stringify(value)}`);
        if ('returns' in step) assertMatches(step.returns, value, what);
        if (step.handler_calls_at_least !== undefined) assert.ok(c.handlerCalls - before >= step.handler_calls_at_least, what);
        if (step.handler_errors_at_least !== undefined) assert.ok(value.handlerErrors >= step.handler_errors_at_least, `${what}: ${JSON.stringify(value)}`);
        if (step.argv_has !== undefined) {
          const has = step.argv_has;
          // `--opt value` in the table also matches the joined `--opt=value` a harness gets.
          const joined = [`${has[0]}=${has.slice(1).join(' ')}`];
          assert.ok(containsRun(value, has) || (has.length === 2 && containsRun(value, joined)), `${what}: ${JSON.stringify(value)}`);
        }
        for (const lack of step.argv_lacks ?? []) {
          assert.ok(!value.some((a) => a === lack || a.startsWith(`${lack}=`)), `${what}: ${lack} in ${JSON.stringify(value)}`);
        }
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
}
