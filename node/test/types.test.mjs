// The exported TypeScript types against what the core really emits. The wire types are
// generated (node/src/generated/types.ts, from core/schema/events.schema.json by `make generate`;
// `make check-generated` fails when they are stale); this test checks the generator's output
// independently and, above all, checks real values against the types:
//  1. every definition of the schema is exported from `agentstream` (read with the TypeScript
//     compiler API), with the schema's property names camelCased, the same optionality, enum
//     members and union/refinement discriminants (hook event details merged flat);
//  2. `tsc --noEmit` (strict) accepts test/types/example.ts and example.mts, which use every
//     public type as user code does, plus a generated file that types every golden expected
//     event as OutputEvent, a hook event of every type and every golden input's replay (hooks,
//     stream items, outcome, stats) as HookEvent / Envelope / RunOutcome / DecodeStats, lifecycle
//     events as LifecycleEvent, and results of real runs as RunResult (one representative of
//     each distinct shape, to keep tsc fast).
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
/** Public names that differ from the schema's. */
const RENAMED = { Agent: 'AgentName' };
const tsName = (name) => RENAMED[name] ?? name;
const defName = (ref) => ref.replace('#/$defs/', '');

// ---------------------------------------------------------------------------------------------
// Schema side

/** Properties (name → {required}) of an object schema, following a `$ref` (variants). */
function objectShape(node) {
  const props = new Map();
  const visit = (n) => {
    if (n.$ref) visit(defs[defName(n.$ref)]);
    const required = new Set(n.required ?? []);
    for (const k of Object.keys(n.properties ?? {})) props.set(k, { required: required.has(k) });
  };
  visit(node);
  return props;
}

const isEnum = (def) => Array.isArray(def.enum) || (!def.properties && (def.oneOf ?? []).length > 0 && def.oneOf.every((a) => a.type === 'string' && 'const' in a));
const enumValues = (def) => def.enum ?? def.oneOf.map((v) => v.const);
const tagOf = (arm) => Object.entries(arm.properties ?? {}).find(([, v]) => 'const' in v)?.[0];

// ---------------------------------------------------------------------------------------------
// TypeScript side: the public `agentstream` module's exports, through src/types.ts

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
  const resolve = (s) => (s.flags & ts.SymbolFlags.Alias ? checker.getAliasedSymbol(s) : s);
  const exports = new Map(checker.getExportsOfModule(checker.getSymbolAtLocation(source)).map((s) => [s.name, resolve(s)]));
  const declared = (name) => {
    const sym = exports.get(name);
    assert.ok(sym, `src/types.ts does not export ${name}`);
    return checker.getDeclaredTypeOfSymbol(sym);
  };
  const properties = (type) =>
    new Map(
      type.getProperties().map((p) => [
        p.name,
        { optional: (p.flags & ts.SymbolFlags.Optional) !== 0, type: checker.getTypeOfSymbol(p) },
      ]),
    );
  const literals = (type) => (type.isUnion() ? type.types : [type]).map((t) => t.value);
  const members = (type) => (type.isUnion() ? type.types : [type]);
  return { checker, exports, declared, properties, literals, members };
}

/** TypeScript properties of `type` against schema properties `want` (name → {required}). */
function sameProperties(t, what, type, want) {
  const got = t.properties(type);
  assert.deepEqual([...got.keys()].sort(), [...want.keys()].sort(), `${what}: property names`);
  for (const [name, w] of want) {
    assert.equal(got.get(name).optional, !w.required, `${what}.${name}: optional in TypeScript = not required in the schema`);
  }
  return got;
}

test('every definition of the core schema is exported with its properties, members and tags', () => {
  const t = loadTypes();
  const detailDefs = new Set(
    (defs.HookEvent.oneOf ?? []).map((arm) => defName(arm.properties.details.$ref)),
  );
  let checked = 0;
  for (const [name, def] of Object.entries(defs)) {
    if (detailDefs.has(name)) continue; // merged into the flat hook events, checked below
    if (Object.values(defs).some((d) => (d.oneOf ?? []).some((arm) => arm.$ref === `#/$defs/${name}` && tagOf(arm)))) {
      continue; // a struct that is a union variant: checked with its union
    }
    const type = t.declared(tsName(name));
    checked += 1;
    if (isEnum(def)) {
      assert.deepEqual(t.literals(type).sort(), [...enumValues(def)].sort(), `${name}: members`);
    } else if (def.properties && def.oneOf) {
      // A refined struct: one union member per arm, the tag fixing the arm's constants and types.
      const base = objectShape(def);
      const flatten = name === 'HookEvent' ? 'details' : undefined;
      const byTag = new Map(t.members(type).map((m) => [t.properties(m).get(camel(tagOf(def.oneOf[0]))).type.value, m]));
      assert.equal(byTag.size, def.oneOf.length, `${name}: one member per arm`);
      for (const arm of def.oneOf) {
        const tag = tagOf(arm);
        const member = byTag.get(arm.properties[tag].const);
        assert.ok(member, `${name}: no member for ${tag}=${arm.properties[tag].const}`);
        const want = new Map([...base].filter(([k]) => k !== flatten).map(([k, v]) => [camel(k), v]));
        if (flatten) for (const [k, v] of objectShape(arm.properties[flatten])) want.set(camel(k), v);
        const got = sameProperties(t, `${name} ${arm.title}`, member, want);
        for (const [k, v] of Object.entries(arm.properties)) {
          if ('const' in v) assert.deepEqual(t.literals(got.get(camel(k)).type), [v.const], `${arm.title}.${k}`);
        }
      }
    } else if (def.oneOf) {
      // A tagged union: one member per variant, same tag values and properties.
      const tag = tagOf(def.oneOf[0]);
      const byTag = new Map(t.members(type).map((m) => [t.properties(m).get(camel(tag)).type.value, m]));
      assert.deepEqual([...byTag.keys()].sort(), def.oneOf.map((a) => a.properties[tag].const).sort(), `${name}: tags`);
      for (const arm of def.oneOf) {
        const want = new Map([...objectShape(arm)].map(([k, v]) => [camel(k), v]));
        sameProperties(t, `${name} ${arm.properties[tag].const}`, byTag.get(arm.properties[tag].const), want);
      }
    } else if (def.properties) {
      const want = new Map([...objectShape(def)].map(([k, v]) => [camel(k), v]));
      sameProperties(t, name, type, want);
    } else {
      assert.ok(def.additionalProperties, `${name}: a map`);
    }
  }
  assert.ok(checked >= 30, `only ${checked} definitions checked`);
});

test('the error table is exported in code order', async () => {
  const { ERROR_TABLE, ERROR_CODES } = await import('agentstream');
  assert.deepEqual(
    ERROR_TABLE.map((e) => [e.kind, e.number, e.advice]),
    schema['x-errors'].map((e) => [e.name, e.code, e.advice]),
  );
  assert.deepEqual(ERROR_CODES, schema['x-errors'].map((e) => e.name.toUpperCase()));
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
    [fakeEvolve('claude', 's1-text', { AGENTSTREAM_FAKE_HANG: '1' }), { prompt: 'x', timeoutMs: 100, killGraceMs: 100 }],
    [fakeEvolve('claude', 's1-text', { AGENTSTREAM_FAKE_FLOOD: '3000' }), { prompt: 'x', limits: { highWater: 0 } }],
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
