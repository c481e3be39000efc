// The exported TypeScript types against what the core really emits:
//  1. every type of core/schema/events.schema.json has a TypeScript declaration with the same
//     property names and optionality (LifecycleEvent and DecodeStats camelCased), the same enum
//     members and the same union discriminants (read with the TypeScript compiler API);
//  2. `tsc --noEmit` (strict) accepts test/types/example.ts and example.mts, which use every
//     public type, plus a generated file that types every golden expected event as OutputEvent,
//     a hook event of every type and every golden input's replay (hooks, stream items, outcome,
//     stats) as HookEvent / Envelope / RunOutcome / DecodeStats, and lifecycle events as
//     LifecycleEvent (one representative of each distinct shape, to keep tsc fast).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdirSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

import { hookFromCanonical, lifecycleFromCanonical, replay } from 'agentstream';

import { fakeEvolve } from './fake.mjs';

const require = createRequire(import.meta.url);
const ts = require('typescript');

const here = dirname(fileURLToPath(import.meta.url));
const pkg = join(here, '..');
const repo = join(pkg, '..');
const schema = JSON.parse(readFileSync(join(repo, 'core', 'schema', 'events.schema.json'), 'utf8'));
const defs = schema.$defs;

const camel = (k) => k.replace(/_([a-z0-9])/g, (_, c) => c.toUpperCase());

// ---------------------------------------------------------------------------------------------
// Schema side

/** Properties and required names of an object schema, following `$ref`s (variants of tagged enums). */
function objectShape(node) {
  const props = new Map();
  const required = new Set();
  const visit = (n) => {
    if (n.$ref) visit(defs[n.$ref.replace('#/$defs/', '')]);
    for (const [k, v] of Object.entries(n.properties ?? {})) props.set(k, v);
    for (const k of n.required ?? []) required.add(k);
  };
  visit(node);
  return { props, required };
}

function nullable(prop) {
  const t = prop.type;
  return Array.isArray(t) ? t.includes('null') : t === 'null';
}

function enumValues(def) {
  if (def.enum) return def.enum;
  return def.oneOf.map((v) => v.const ?? v.enum?.[0]);
}

function variant(defName, tag, value) {
  const v = defs[defName].oneOf.find((x) => objectShape(x).props.get(tag)?.const === value);
  assert.ok(v, `${defName} has no variant ${tag}=${value}`);
  return v;
}

function discriminants(defName, tag) {
  return defs[defName].oneOf.map((x) => objectShape(x).props.get(tag)?.const);
}

// TypeScript name → schema object (+ key casing)
const OBJECTS = {
  OutputEvent: [defs.OutputEvent],
  AgentMessageChunk: [variant('SessionUpdate', 'sessionUpdate', 'agent_message_chunk')],
  AgentThoughtChunk: [variant('SessionUpdate', 'sessionUpdate', 'agent_thought_chunk')],
  UserMessageChunk: [variant('SessionUpdate', 'sessionUpdate', 'user_message_chunk')],
  ToolCall: [variant('SessionUpdate', 'sessionUpdate', 'tool_call')],
  ToolCallUpdate: [variant('SessionUpdate', 'sessionUpdate', 'tool_call_update')],
  Plan: [variant('SessionUpdate', 'sessionUpdate', 'plan')],
  AgentError: [variant('SessionUpdate', 'sessionUpdate', 'error')],
  AgentUsage: [variant('SessionUpdate', 'sessionUpdate', 'usage')],
  TextContent: [variant('ContentBlock', 'type', 'text')],
  ImageContent: [variant('ContentBlock', 'type', 'image')],
  WrappedContent: [variant('ToolCallContent', 'type', 'content')],
  DiffContent: [variant('ToolCallContent', 'type', 'diff')],
  ToolCallLocation: [defs.ToolCallLocation],
  PlanEntry: [defs.PlanEntry],
  TokenUsage: [defs.TokenUsage],
  LifecycleEvent: [defs.LifecycleEvent, camel],
  DecodeStats: [defs.DecodeStats, camel],
};
// Optional in the schema (an `Option` the Rust side serializes as null rather than skipping):
// the seed's `sandbox_id: str | None` and `oldText: str | None` are always present.
const ALWAYS_SERIALIZED = new Set(['LifecycleEvent.sandboxId', 'DiffContent.oldText']);
// TypeScript name → schema enum
const ENUMS = {
  ToolKind: 'ToolKind',
  ToolCallStatus: 'ToolCallStatus',
  PlanEntryStatus: 'PlanEntryStatus',
  PlanEntryPriority: 'PlanEntryPriority',
  UsageScope: 'UsageScope',
  SandboxState: 'SandboxState',
  AgentState: 'AgentState',
  LifecycleReason: 'LifecycleReason',
  AgentName: 'Agent',
};
// TypeScript union → schema tagged union
const UNIONS = {
  SessionUpdate: ['SessionUpdate', 'sessionUpdate'],
  ContentBlock: ['ContentBlock', 'type'],
  ToolCallContent: ['ToolCallContent', 'type'],
};
// Schema definitions covered by a declaration above (every one must be).
const COVERED = new Set([
  'OutputEvent', 'SessionUpdate', 'ContentBlock', 'ImageContent', 'ToolCallContent', 'DiffContent', 'ToolCallLocation',
  'ToolCall', 'ToolCallUpdate', 'PlanEntry', 'TokenUsage', 'LifecycleEvent', 'DecodeStats', ...Object.values(ENUMS),
]);

// ---------------------------------------------------------------------------------------------
// TypeScript side

let loaded;
function loadTypes() {
  loaded ??= compileTypes();
  return loaded;
}

function compileTypes() {
  const file = join(pkg, 'src', 'types.ts');
  const program = ts.createProgram([file], { strict: true, target: ts.ScriptTarget.ES2022, noEmit: true, types: [] });
  const checker = program.getTypeChecker();
  const source = program.getSourceFile(file);
  const exports = new Map(checker.getExportsOfModule(checker.getSymbolAtLocation(source)).map((s) => [s.name, s]));
  const declared = (name) => {
    const sym = exports.get(name);
    assert.ok(sym, `src/types.ts does not export ${name}`);
    return checker.getDeclaredTypeOfSymbol(sym);
  };
  const properties = (name) =>
    declared(name)
      .getProperties()
      .map((p) => ({
        name: p.name,
        optional: (p.flags & ts.SymbolFlags.Optional) !== 0,
        type: checker.getTypeOfSymbol(p),
      }));
  const literals = (type) => (type.isUnion() ? type.types : [type]).map((t) => t.value);
  return { checker, declared, properties, literals };
}

test('every type of the core schema has a TypeScript declaration', () => {
  for (const name of Object.keys(defs)) assert.ok(COVERED.has(name), `schema type ${name} has no TypeScript counterpart in this test`);
});

test('object types: same properties and optionality as the schema', () => {
  const t = loadTypes();
  for (const [tsName, [node, rename = (k) => k]] of Object.entries(OBJECTS)) {
    const { props, required } = objectShape(node);
    const want = new Map([...props].map(([k, v]) => [rename(k), { schema: v, required: required.has(k) }]));
    const got = t.properties(tsName);
    assert.deepEqual(got.map((p) => p.name).sort(), [...want.keys()].sort(), `${tsName}: property names`);
    for (const p of got) {
      const w = want.get(p.name);
      if (p.optional) {
        assert.ok(!w.required, `${tsName}.${p.name} is optional in TypeScript but required in the schema`);
      } else {
        const alwaysSerialized = ALWAYS_SERIALIZED.has(`${tsName}.${p.name}`) && nullable(w.schema);
        assert.ok(w.required || alwaysSerialized, `${tsName}.${p.name} is required in TypeScript but optional in the schema`);
      }
      if (w.schema.const !== undefined) {
        assert.deepEqual(t.literals(p.type), [w.schema.const], `${tsName}.${p.name} discriminant`);
      }
    }
  }
});

test('enums: same members as the schema', () => {
  const t = loadTypes();
  for (const [tsName, schemaName] of Object.entries(ENUMS)) {
    assert.deepEqual(t.literals(t.declared(tsName)).sort(), [...enumValues(defs[schemaName])].sort(), tsName);
  }
});

test('tagged unions: same discriminants as the schema', () => {
  const t = loadTypes();
  for (const [tsName, [schemaName, tag]] of Object.entries(UNIONS)) {
    const got = t.declared(tsName).types.flatMap((m) => t.literals(t.checker.getTypeOfSymbol(m.getProperty(tag))));
    assert.deepEqual(got.sort(), discriminants(schemaName, tag).sort(), tsName);
  }
});

// ---------------------------------------------------------------------------------------------
// tsc over the examples and generated data

/**
 * The shape of an event for typing purposes: discriminant values kept, every other primitive
 * replaced by its type, arrays reduced to their distinct element shapes. Events with the same
 * skeleton type-check alike, so tsc sees one representative of each (it is slow on big literals).
 */
const TAGS = new Set(['sessionUpdate', 'type', 'kind', 'status', 'scope', 'priority', 'channel', 'state', 'reason']);
function skeleton(value, key) {
  if (Array.isArray(value)) return [...new Set(value.map((v) => JSON.stringify(skeleton(v))))].sort();
  if (value !== null && typeof value === 'object') {
    return Object.fromEntries(Object.keys(value).sort().map((k) => [k, skeleton(value[k], k)]));
  }
  return TAGS.has(key) ? value : value === null ? null : typeof value;
}

function goldenInputs() {
  const root = join(repo, 'tests', 'golden');
  const out = [];
  for (const agent of readdirSync(root, { withFileTypes: true })) {
    if (!agent.isDirectory()) continue;
    for (const file of readdirSync(join(root, agent.name)).sort()) {
      if (file.endsWith('.input.jsonl')) out.push({ agent: agent.name, bytes: readFileSync(join(root, agent.name, file)) });
    }
  }
  return out;
}

function goldenEvents() {
  const root = join(repo, 'tests', 'golden');
  const out = [];
  for (const agent of readdirSync(root, { withFileTypes: true })) {
    if (!agent.isDirectory()) continue;
    for (const file of readdirSync(join(root, agent.name)).sort()) {
      if (!file.endsWith('.expected.jsonl')) continue;
      const lines = readFileSync(join(root, agent.name, file), 'utf8').split('\n').filter((l) => l.trim() !== '');
      out.push({ name: `${agent.name}/${file}`, events: lines.map((l) => JSON.parse(l)) });
    }
  }
  return out;
}

const base = { run_id: 'run-1', agent_id: 'claude', timestamp: '2026-12-02T00:00:00.000Z', status: 'running' };
const usage = { promptTokens: 10, completionTokens: 2, cachedTokens: 4, extra: { service_tier: 'standard' } };
const totals = { promptTokens: 10, completionTokens: 2, cachedTokens: 4, costUsd: 0.01 };
const tool = { step_index: 0, tool_call_id: 't1', tool_name: 'Bash' };
/** One canonical hook of every type the core derives (core/src/hooks.rs table). */
const CANONICAL_HOOKS = [
  { type: 'run.started', details: { operation: 'run' } },
  { type: 'step.started', details: { step_index: 0, message_id: 'm1', model: 'x' } },
  { type: 'model.completed', details: { step_index: 0, message_id: 'm1', model: 'x', usage } },
  { type: 'step.completed', details: { step_index: 0, message_id: 'm1', model: 'x' } },
  { type: 'tool.started', details: { ...tool, kind: 'execute', title: 'ls', arguments: { command: 'ls', nested: [1, { a: null }] } } },
  { type: 'tool.preliminary_result', details: { ...tool, result: 'partial' } },
  { type: 'tool.completed', details: { ...tool, output: 'ok', raw_output: { exit_code: 0, aggregated_output: 'ok' } } },
  { type: 'tool.failed', details: { ...tool, error: 'denied', retryable: true } },
  { type: 'tool.indeterminate', details: { ...tool, detail: 'stopped after dispatch' } },
  { type: 'run.waiting_for_human', details: { step_index: 0, pause: { kind: 'permission', tool_call_id: 't1', tool_name: null, reason: 'requires permission to use Bash' } } },
  { type: 'response.output_text.delta', details: { step_index: 0, delta: 'Hel' } },
  { type: 'response.reasoning.delta', details: { step_index: 0, delta: 'hmm' } },
  { type: 'run.completed', status: 'completed', details: { output: 'Hello', usage: totals } },
  { type: 'run.failed', status: 'failed', details: { error: 'exit code 1' } },
  { type: 'run.cancelled', status: 'cancelled', details: { reason: 'stalled', last_sequence: -1, usage: totals } },
  { type: 'run.stopped', status: 'stopped', details: { stop_reason: 'timeout' } },
].map((h, i) => ({ ...base, sequence: i, ...h }));

const CANONICAL_LIFECYCLE = [
  { sandbox_id: null, sandbox: 'running', agent: 'running', timestamp: base.timestamp, reason: 'run_start' },
  { sandbox_id: 'sb-1', sandbox: 'ready', agent: 'idle', timestamp: base.timestamp, browser: { live_url: 'https://x', session_id: 's', session_tag: 't' }, reason: 'browser_ready' },
  { sandbox_id: null, sandbox: 'ready', agent: 'idle', timestamp: base.timestamp, reason: 'run_complete' },
];

test('hook events converted by the core carry the flat camelCase envelope', () => {
  for (const h of CANONICAL_HOOKS) {
    const js = hookFromCanonical(h);
    for (const k of ['type', 'runId', 'agentId', 'timestamp', 'status', 'sequence']) assert.ok(k in js, `${h.type}: no ${k}`);
    assert.equal(js.type, h.type);
    assert.equal(js.sequence, h.sequence);
    for (const k of Object.keys(js)) assert.ok(!k.includes('_'), `${h.type}: ${k} is not camelCase`);
  }
});

/** Results, envelopes and hook events of real runs (fake harness) of every outcome. */
async function liveRuns() {
  const runs = [
    [fakeEvolve('claude', 's2-bash'), { prompt: 'x' }],
    [fakeEvolve('codex', 's1-text', { AGENTSTREAM_FAKE_EXIT: '3' }), { prompt: 'x' }],
    [fakeEvolve('gemini', 's1-text', { AGENTSTREAM_FAKE_DIE_MID_LINE: '1' }), { prompt: 'x' }],
    [fakeEvolve('claude', 's1-text', { AGENTSTREAM_FAKE_HANG: '1' }), { prompt: 'x', timeout: 100, killGrace: 100 }],
    [fakeEvolve('claude', 's1-text', { AGENTSTREAM_FAKE_FLOOD: '3000' }), { prompt: 'x', backpressure: { highWater: 0 } }],
  ];
  const results = [];
  const items = [];
  const hooks = [];
  for (const [evolve, options] of runs) {
    const s = evolve.stream({ ...options, onEvent: (h) => void hooks.push(h) });
    for await (const e of s) items.push(e);
    results.push(await s.result);
  }
  return { results, items, hooks };
}

test('tsc --noEmit (strict): examples, every golden event, hook, stream item and outcome', async () => {
  const dir = join(here, 'types', '.generated');
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  const lines = ["import type { DecodeStats, Envelope, HookEvent, LifecycleEvent, OutputEvent, RunOutcome, RunResult } from 'agentstream';", ''];
  const seen = new Set();
  let total = 0;
  goldenEvents().forEach((g, i) => {
    total += g.events.length;
    const fresh = g.events.filter((e) => {
      const k = JSON.stringify(skeleton(e));
      return seen.has(k) ? false : (seen.add(k), true);
    });
    if (fresh.length) lines.push(`// ${g.name}`, `export const golden${i}: OutputEvent[] = ${JSON.stringify(fresh, null, 1)};`);
  });
  lines.push(`// ${seen.size} distinct event shapes of ${total} golden events`);
  // Every golden input replayed: its hook events, stream items and outcome, one of each shape.
  const replays = goldenInputs().map((g) => replay(g.agent, g.bytes, { runId: 'golden' }));
  const distinct = (values) => {
    const shapes = new Set();
    return values.filter((v) => {
      const k = JSON.stringify(skeleton(v));
      return shapes.has(k) ? false : (shapes.add(k), true);
    });
  };
  const hooks = distinct([...CANONICAL_HOOKS.map((h) => hookFromCanonical(h)), ...replays.flatMap((r) => r.hooks)]);
  lines.push(`export const hooks: HookEvent[] = ${JSON.stringify(hooks, null, 1)};`);
  lines.push(`export const items: Envelope[] = ${JSON.stringify(distinct(replays.flatMap((r) => r.items)), null, 1)};`);
  lines.push(`export const outcomes: RunOutcome[] = ${JSON.stringify(distinct(replays.map((r) => r.outcome)), null, 1)};`);
  lines.push(`export const stats: DecodeStats[] = ${JSON.stringify(distinct(replays.map((r) => r.stats)), null, 1)};`);
  lines.push(`export const lifecycle: LifecycleEvent[] = ${JSON.stringify(CANONICAL_LIFECYCLE.map((e) => lifecycleFromCanonical(e)), null, 1)};`);
  const live = await liveRuns();
  assert.deepEqual([...new Set(live.results.map((r) => r.state))].sort(), ['cancelled', 'completed', 'failed']);
  lines.push(`export const results: RunResult[] = ${JSON.stringify(distinct(live.results), null, 1)};`);
  lines.push(`export const liveItems: Envelope[] = ${JSON.stringify(distinct(live.items), null, 1)};`);
  lines.push(`export const liveHooks: HookEvent[] = ${JSON.stringify(distinct(live.hooks), null, 1)};`);
  writeFileSync(join(dir, 'data.ts'), lines.join('\n') + '\n');
  const tsc = require.resolve('typescript/bin/tsc');
  try {
    execFileSync(process.execPath, [tsc, '-p', join(here, 'types', 'tsconfig.json')], { cwd: pkg, encoding: 'utf8', stdio: 'pipe' });
  } catch (e) {
    assert.fail(`tsc failed:\n${e.stdout}${e.stderr}`);
  }
  rmSync(dir, { recursive: true, force: true });
});
