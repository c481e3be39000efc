// A tool input nested a million levels deep (issue 24, item 1): every way a record reaches
// JavaScript — parse, the Decoder, replay's hooks, a real run's content and hooks — delivers it
// without a crash, its containers past 64 levels as {"$rawJson": "<their JSON text>"} (the core's
// documented depth limit, the same in every language), or masked whole ("[redacted]") when
// redaction is on (the default): what is too deep to judge is not passed through.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { Decoder, Evolve, parse, replay } from 'agentstream';

import { FAKE } from './fake.mjs';

const DEPTH = 1_000_000;
const MAX_DEPTH = 64;

function deepLine() {
  const line = {
    type: 'assistant',
    session_id: 's',
    message: {
      id: 'm1', type: 'message', role: 'assistant', model: 'x',
      content: [{ type: 'tool_use', id: 't1', name: 'Bash', input: { command: 'ls', deep: '@' } }],
    },
  };
  return JSON.stringify(line).replace('"@"', '['.repeat(DEPTH) + ']'.repeat(DEPTH)) + '\n';
}

function assertDeepInput(rawInput, masked = true) {
  assert.equal(rawInput.command, 'ls');
  let value = rawInput.deep;
  for (let i = 0; i < MAX_DEPTH - 1; i++) {
    assert.equal(value.length, 1);
    value = value[0];
  }
  if (masked) {
    assert.equal(value, '[redacted]');
    return;
  }
  assert.deepEqual(Object.keys(value), ['$rawJson']);
  assert.equal(value.$rawJson.length, 2 * (DEPTH - MAX_DEPTH + 1));
}

const toolCall = (events) => events.find((e) => e.update.sessionUpdate === 'tool_call').update;

test('parse, Decoder and replay survive a tool input a million levels deep', () => {
  const line = deepLine();
  assertDeepInput(toolCall(parse('claude', line)).rawInput);
  assertDeepInput(toolCall(parse('claude', line, { redact: false })).rawInput, false);
  const decoder = new Decoder('claude', { redact: false });
  const bytes = Buffer.from(line);
  const events = [];
  for (let i = 0; i < bytes.length; i += 65536) events.push(...decoder.feed(bytes.subarray(i, i + 65536)));
  events.push(...decoder.finish());
  assertDeepInput(toolCall(events).rawInput, false);
  assertDeepInput(replay('claude', line).hooks.find((h) => h.type === 'tool.started').arguments);
  const unmasked = replay('claude', line, { redact: false }).hooks.find((h) => h.type === 'tool.started');
  assertDeepInput(unmasked.arguments, false);
});

test('a real run survives a tool input a million levels deep', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'agentstream-deep-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  writeFileSync(join(dir, 'deep.input.jsonl'), deepLine());
  const evolve = new Evolve({ config: { type: 'claude', bin: FAKE, env: { AGENTSTREAM_FAKE_TRACE: join(dir, 'deep') } } });
  const content = [];
  const hooks = [];
  evolve.on('content', (e) => void content.push(e));
  const result = await evolve.run({ prompt: 'x', onEvent: (h) => void hooks.push(h) });
  assert.ok(['completed', 'failed'].includes(result.state), result.state);
  assertDeepInput(toolCall(content).rawInput);
  assertDeepInput(hooks.find((h) => h.type === 'tool.started').arguments);
});
