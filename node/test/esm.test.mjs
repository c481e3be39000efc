// The package from an ES module consumer: named imports work, and they are the very same objects
// the CommonJS entry exports (no dual-package hazard: one copy of every class).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';

import * as esm from 'agentstream';
import { Decoder, parse, Evolve, AgentStreamError, InvalidArgumentError } from 'agentstream';

const cjs = createRequire(import.meta.url)('agentstream');

test('ESM named exports are the CommonJS objects', () => {
  const names = Object.keys(cjs).filter((k) => k !== '__esModule');
  for (const name of names) assert.equal(esm[name], cjs[name], name);
  assert.equal(Decoder, cjs.Decoder);
  assert.equal(AgentStreamError, cjs.AgentStreamError);
});

test('ESM: decode and validate', () => {
  const line = '{"type":"system","subtype":"init","session_id":"s","model":"m"}\n';
  const d = new Decoder('claude');
  assert.deepStrictEqual([...d.feed(line), ...d.finish()], parse('claude', line));
  assert.throws(() => new Evolve({ config: { type: 'claude' } }).on('nope', () => {}), (e) => e instanceof TypeError && e instanceof InvalidArgumentError && e.code === 'INVALID_ARGUMENT');
  assert.throws(() => new cjs.Decoder('nope'), InvalidArgumentError, 'classes shared across module systems');
});
