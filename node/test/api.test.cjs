// The public API from a CommonJS consumer: Decoder, parse, errors, Evolve.on() validation and
// panic safety.
'use strict';
const { test } = require('node:test');
const assert = require('node:assert/strict');

const agentstream = require('agentstream');
const {
  AGENTS,
  AgentStreamError,
  CHANNELS,
  Decoder,
  ERROR_CODES,
  Evolve,
  InvalidArgumentError,
  VERSION,
  didWork,
  hookFromCanonical,
  isAgentStreamError,
  lifecycleFromCanonical,
  parse,
  replay,
} = agentstream;

const CLAUDE_LINES = [
  '{"type":"system","subtype":"init","session_id":"sess-1","model":"claude-x"}',
  '{"type":"assistant","message":{"id":"msg_1","model":"claude-x","role":"assistant","content":[{"type":"text","text":"héllo ✓"}]},"session_id":"sess-1"}',
  '',
].join('\n');

test('constants come from the core', () => {
  // The core's one list of agents (and of channels), as its schema writes it.
  const schema = require('../../core/schema/events.schema.json');
  const names = (def) => def.enum ?? def.oneOf.map((v) => v.const);
  assert.deepEqual([...AGENTS], names(schema.$defs.Agent));
  assert.ok(AGENTS.includes('claude') && AGENTS.length >= 7);
  assert.deepEqual([...CHANNELS], names(schema.$defs.Channel));
  const table = JSON.parse(require('../native/index.js').errorKindsJson());
  assert.deepEqual([...ERROR_CODES], table.map((k) => k.code), 'the codes are the core table, in order');
  for (const k of table) {
    const e = new AgentStreamError(k.code, 'x');
    assert.equal(e.kind, k.kind);
    assert.equal(e.numericCode, k.number);
  }
  assert.match(VERSION, /^\d+\.\d+\.\d+/);
  assert.equal(VERSION, require('agentstream/package.json').version, 'npm version = core version');
});

test('Decoder: feed/finish/stats/sessionId on every agent without throwing on bad lines', () => {
  const junk = Buffer.from('null\n42\n[1]\n{not json\n\n   \n{"type":"never-heard-of-it"}\n\xff\xfe\n', 'latin1');
  for (const agent of AGENTS) {
    const d = new Decoder(agent);
    assert.equal(d.agent, agent);
    assert.equal(d.sessionId, undefined);
    const events = [...d.feed(junk), ...d.finish()];
    assert.ok(Array.isArray(events));
    const s = d.stats;
    assert.equal(s.lines, 8, agent);
    assert.equal(s.blankLines, 2, agent);
    assert.equal(s.nonObject, 3, agent);
    assert.equal(s.invalidUtf8Lines, 1, agent);
    assert.equal(s.bytes, junk.length, agent);
    const diags = d.takeDiagnostics();
    assert.ok(diags.some((x) => x.line === 8 && /UTF-8/.test(x.message)), JSON.stringify(diags));
    assert.deepEqual(d.takeDiagnostics(), [], 'diagnostics are taken once');
    assert.deepEqual(d.feed('{"type":"x"}\n'), [], 'feed after finish is a no-op');
  }
});

test('Decoder: stats keys are camelCase and every counter is a number', () => {
  const s = new Decoder('codex').stats;
  assert.deepEqual(Object.keys(s).sort(), [
    'blankLines', 'bytes', 'events', 'invalidJson', 'invalidUtf8Lines', 'lines', 'nonObject', 'oversizeLines', 'unexpectedShape', 'unknownType',
  ]);
  for (const v of Object.values(s)) assert.equal(typeof v, 'number');
});

test('Decoder: accepts string, Buffer, Uint8Array, ArrayBuffer and other views alike', () => {
  const bytes = Buffer.from(CLAUDE_LINES, 'utf8');
  const want = parse('claude', CLAUDE_LINES);
  const inputs = [
    CLAUDE_LINES,
    bytes,
    new Uint8Array(bytes),
    bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.length),
    new DataView(bytes.buffer, bytes.byteOffset, bytes.length),
  ];
  for (const input of inputs) {
    const d = new Decoder('claude');
    assert.deepStrictEqual([...d.feed(input), ...d.finish()], want);
    assert.deepStrictEqual(parse('claude', input), want);
  }
});

test('Decoder: a UTF-8 character split across chunks survives', () => {
  const bytes = Buffer.from(CLAUDE_LINES, 'utf8');
  const split = bytes.indexOf(Buffer.from('é')) + 1; // inside the 2-byte character
  const d = new Decoder('claude');
  const got = [...d.feed(bytes.subarray(0, split)), ...d.feed(bytes.subarray(split)), ...d.finish()];
  assert.deepStrictEqual(got, parse('claude', bytes));
  assert.equal(d.stats.invalidUtf8Lines, 0);
});

test('Decoder: a final line without a newline is decoded by finish()', () => {
  const d = new Decoder('claude');
  const body = CLAUDE_LINES.trimEnd();
  const early = d.feed(body);
  assert.equal(d.hasPartialLine, true);
  const late = d.finish();
  assert.equal(d.hasPartialLine, false);
  assert.deepStrictEqual([...early, ...late], parse('claude', CLAUDE_LINES));
  assert.deepStrictEqual(d.finish(), [], 'finish twice is a no-op');
});

test('Decoder: maxLineBytes skips over-long lines with a diagnostic, never throws', () => {
  const d = new Decoder('claude', { maxLineBytes: 64 });
  d.feed(`{"type":"system","x":"${'a'.repeat(200)}"}\n{"type":"x"}\n`);
  d.finish();
  assert.equal(d.stats.oversizeLines, 1);
  assert.equal(d.stats.lines, 2);
  assert.match(d.takeDiagnostics()[0].message, /maximum line length/);
  for (const bad of [0, -1, 1.5, NaN, Infinity, 'big']) {
    assert.throws(() => new Decoder('claude', { maxLineBytes: bad }), (e) => e instanceof TypeError && e.code === 'INVALID_ARGUMENT', String(bad));
  }
});

test("Decoder: onOversize 'raise' throws DecodeLimitError with the call's other events", () => {
  const d = new Decoder('claude', { maxLineBytes: 150, onOversize: 'raise' });
  const good = '{"type":"system","subtype":"init","session_id":"s1","model":"m"}\n';
  const text = '{"type":"assistant","message":{"id":"m1","role":"assistant","content":[{"type":"text","text":"hi"}]}}\n';
  const long = `{"type":"system","x":"${'a'.repeat(200)}"}\n`;
  assert.deepStrictEqual(d.feed(good), []);
  assert.throws(
    () => d.feed(text + long),
    (e) => {
      assert.ok(e instanceof agentstream.DecodeLimitError);
      assert.ok(e instanceof AgentStreamError);
      assert.equal(e.code, 'DECODE_LIMIT');
      assert.equal(e.kind, 'decode_limit');
      assert.equal(e.numericCode, 1007);
      assert.equal(e.line, 3);
      assert.match(e.message, /^line 3: /);
      assert.deepStrictEqual(e.events, parse('claude', good + text).slice(-e.events.length));
      assert.ok(e.events.length > 0);
      return true;
    },
  );
  assert.equal(d.feed(text).length > 0, true, 'the decoder stays usable');
  assert.equal(d.takeDiagnostics().length, 1, 'the diagnostic is still reported');
  assert.throws(() => new Decoder('claude', { onOversize: 'explode' }), { name: 'TypeError', code: 'INVALID_ARGUMENT' });
  // skip (the default) never throws
  const s = new Decoder('claude', { maxLineBytes: 150 });
  assert.ok(Array.isArray(s.feed(long)));
});

test('replay: a whole run from recorded output, deterministic', () => {
  const whole = CLAUDE_LINES + '{"type":"result","subtype":"success","is_error":false,"result":"héllo ✓"}\n';
  const r = replay('claude', whole);
  assert.equal(r.items[0].runId, 'replay');
  assert.deepStrictEqual(r.items.map((e) => e.channel), ['lifecycle', 'stdout', 'stdout', 'content', 'stdout', 'lifecycle']);
  assert.equal(r.items[1].event, CLAUDE_LINES.split('\n')[0] + '\n', 'stdout carries each raw line');
  assert.equal(r.items[0].event.timestamp, '1970-01-01T00:00:00.000Z');
  assert.deepStrictEqual(r.outcome, { state: 'completed' });
  assert.equal(r.hooks[0].type, 'run.started');
  assert.equal(r.hooks.at(-1).type, 'run.completed');
  assert.equal(r.hooks.at(-1).output, 'héllo ✓');
  assert.equal(r.stats.lines, 3);
  assert.deepStrictEqual(replay('claude', Buffer.from(whole)), r, 'text and bytes alike, deterministic');
  // Without claude's closing `result` line the harness did not finish (decisions.md §1).
  const cut = replay('claude', CLAUDE_LINES);
  assert.equal(cut.outcome.state, 'failed');
  assert.equal(cut.outcome.error, 'no_final_result');
  assert.equal(cut.hooks.at(-1).type, 'run.failed');
  const custom = replay('claude', whole, { runId: 'r-9', agentId: 'bot', timestamp: '2026-12-02T00:00:00.000Z' });
  assert.equal(custom.hooks[0].runId, 'r-9');
  assert.equal(custom.hooks[0].agentId, 'bot');
  assert.equal(custom.hooks[0].timestamp, '2026-12-02T00:00:00.000Z');
  assert.throws(() => replay('claude', CLAUDE_LINES, { runId: 7 }), { name: 'TypeError', code: 'INVALID_ARGUMENT' });
  assert.throws(() => replay('claude', CLAUDE_LINES, { timestamp: 'noon' }), (e) => e.code === 'INVALID_ARGUMENT' && /ISO 8601/.test(e.message));
  assert.throws(() => replay('nope', ''), { name: 'TypeError', code: 'INVALID_ARGUMENT' });
});

test('unknown agent: TypeError with code INVALID_ARGUMENT listing the valid names', () => {
  for (const make of [() => new Decoder('cursor'), () => parse('cursor', ''), () => new Evolve({ config: { type: 'cursor' } })]) {
    assert.throws(make, (e) => {
      assert.ok(e instanceof TypeError);
      assert.ok(e instanceof InvalidArgumentError);
      assert.ok(isAgentStreamError(e));
      assert.equal(e.code, 'INVALID_ARGUMENT');
      assert.equal(e.kind, 'invalid_argument');
      assert.match(e.message, /claude, codex, gemini, qwen, kimi, opencode, droid/);
      return true;
    });
  }
  assert.equal(new Decoder('Claude-Code').agent, 'claude', 'aliases and case are the core rule');
  assert.throws(() => new Decoder(42), { name: 'TypeError', code: 'INVALID_ARGUMENT' });
  assert.throws(() => new Decoder(), { name: 'TypeError', code: 'INVALID_ARGUMENT' });
});

test('wrong input types: TypeError with code INVALID_ARGUMENT', () => {
  const d = new Decoder('claude');
  for (const bad of [42, null, undefined, {}, [1, 2], true]) {
    assert.throws(() => d.feed(bad), { name: 'TypeError', code: 'INVALID_ARGUMENT' }, String(bad));
    assert.throws(() => parse('claude', bad), { name: 'TypeError', code: 'INVALID_ARGUMENT' }, String(bad));
  }
});

test('Evolve.on(): the four channels, chaining, and TypeError for anything else', () => {
  const evolve = new Evolve({ config: { type: 'claude' } });
  assert.equal(evolve.config.type, 'claude');
  assert.ok(Object.isFrozen(evolve.config));
  const handler = () => {};
  for (const name of ['content', 'lifecycle', 'stdout', 'stderr']) {
    assert.equal(evolve.on(name, handler), evolve, 'on() chains');
    assert.equal(evolve.listenerCount(name), 1);
  }
  evolve.off('stdout', handler);
  assert.equal(evolve.listenerCount('stdout'), 0);
  for (const name of ['message', 'Content', 'error', '', 'data', ' content', 'hooks']) {
    assert.throws(
      () => evolve.on(name, handler),
      (e) => {
        assert.ok(e instanceof TypeError, `${name}: ${e}`);
        assert.equal(e.code, 'INVALID_ARGUMENT');
        // The core's Channel message, which lists the four names.
        for (const n of ['"content"', '"lifecycle"', '"stdout"', '"stderr"']) assert.ok(e.message.includes(n), e.message);
        assert.ok(e.message.includes(JSON.stringify(name)), e.message);
        return true;
      },
    );
  }
  for (const bad of [undefined, null, 42, Symbol.iterator]) {
    assert.throws(() => evolve.on(bad, handler), { name: 'TypeError', code: 'INVALID_ARGUMENT' });
  }
  assert.throws(() => evolve.on('content', 'not a function'), { name: 'TypeError', code: 'INVALID_ARGUMENT' });
  assert.throws(() => new Evolve(), { name: 'TypeError', code: 'INVALID_ARGUMENT' });
  assert.throws(() => new Evolve({}), { name: 'TypeError', code: 'INVALID_ARGUMENT' });
  assert.equal(new Evolve({ config: { type: 'claude-code', model: 'm' } }).config.type, 'claude');
});

test('a Rust panic becomes an AgentStreamError with code INTERNAL, and the process lives on', () => {
  for (let i = 0; i < 3; i++) {
    assert.throws(
      () => agentstream.__testPanic('boom ' + i),
      (e) => {
        assert.ok(e instanceof AgentStreamError);
        assert.ok(isAgentStreamError(e));
        assert.equal(e.code, 'INTERNAL');
        assert.equal(e.kind, 'internal');
        assert.match(e.message, new RegExp(`boom ${i}`));
        assert.match(e.message, /lib\.rs:\d+/, 'names where it panicked');
        return true;
      },
    );
  }
  // The addon still works after the panics.
  assert.ok(Array.isArray(parse('claude', CLAUDE_LINES)));
});

test('didWork: error and usage are not work', () => {
  assert.equal(didWork([]), false);
  assert.equal(didWork([{ update: { sessionUpdate: 'error', message: 'x', fatal: true } }, { update: { sessionUpdate: 'usage', scope: 'run', usage: {} } }]), false);
  assert.equal(didWork([{ update: { sessionUpdate: 'agent_message_chunk', content: { type: 'text', text: 'hi' } } }]), true);
});

test('hookFromCanonical: flat camelCase with the envelope first, harness records verbatim', () => {
  const hook = hookFromCanonical({
    type: 'tool.started',
    run_id: 'r1',
    agent_id: 'claude',
    timestamp: '2026-12-02T00:00:00.000Z',
    status: 'running',
    sequence: 7,
    details: { step_index: 0, tool_call_id: 't1', tool_name: 'Read', kind: 'read', title: 'Read /a', arguments: { file_path: '/a' } },
  });
  assert.deepStrictEqual(hook, {
    type: 'tool.started',
    runId: 'r1',
    agentId: 'claude',
    timestamp: '2026-12-02T00:00:00.000Z',
    status: 'running',
    sequence: 7,
    stepIndex: 0,
    toolCallId: 't1',
    toolName: 'Read',
    kind: 'read',
    title: 'Read /a',
    arguments: { file_path: '/a' },
  });
  assert.throws(() => hookFromCanonical('{"nope":1}'), { name: 'TypeError', code: 'INVALID_ARGUMENT' });
});

test('lifecycleFromCanonical: sandboxId and browser keys camelCase, null sandbox id kept', () => {
  const ev = lifecycleFromCanonical({
    sandbox_id: null,
    sandbox: 'ready',
    agent: 'idle',
    timestamp: '2026-12-02T00:00:00.000Z',
    browser: { live_url: 'http://x', session_id: 's' },
    reason: 'browser_ready',
  });
  assert.deepStrictEqual(ev, {
    sandboxId: null,
    sandbox: 'ready',
    agent: 'idle',
    timestamp: '2026-12-02T00:00:00.000Z',
    browser: { liveUrl: 'http://x', sessionId: 's' },
    reason: 'browser_ready',
  });
});

test('feedJson/finishJson: the same events as JSON text', () => {
  const bytes = Buffer.from(CLAUDE_LINES, 'utf8');
  const a = new Decoder('claude');
  const b = new Decoder('claude');
  const split = 40;
  const text = [a.feedJson(bytes.subarray(0, split)), a.feedJson(CLAUDE_LINES.slice(split)), a.finishJson()];
  for (const t of text) assert.equal(typeof t, 'string');
  assert.deepStrictEqual(text.flatMap((t) => JSON.parse(t)), [...b.feed(bytes.subarray(0, split)), ...b.feed(CLAUDE_LINES.slice(split)), ...b.finish()]);
  assert.equal(new Decoder('codex').finishJson(), '[]');
  assert.throws(() => new Decoder('codex').feedJson(7), { name: 'TypeError', code: 'INVALID_ARGUMENT' });
});

test('an addon that does not load says what to do, per platform', () => {
  const { execFileSync } = require('node:child_process');
  const path = require('node:path');
  const pkg = path.join(__dirname, '..');
  const load = (platform) =>
    execFileSync(process.execPath, ['-e', `
      Object.defineProperty(process, 'platform', { value: ${JSON.stringify(platform)} });
      try { require(${JSON.stringify(pkg)}); console.log('loaded'); }
      catch (e) { console.log(JSON.stringify({ message: e.message, cause: e.cause instanceof Error })); }`], { encoding: 'utf8' });
  const darwin = JSON.parse(load('darwin'));
  assert.match(darwin.message, /no prebuilt native addon for darwin-x64/);
  assert.match(darwin.message, /Linux x64 with glibc 2\.17 or newer only/);
  assert.equal(darwin.cause, true);
  const { addonLoadHint } = require('../dist/internal.js');
  assert.match(addonLoadHint('linux', 'x64', '2.36'), /optional dependency `agentstream-linux-x64-gnu`/);
  assert.match(addonLoadHint('linux', 'x64', undefined), /linux-x64 \(not glibc: musl\?\)/);
  assert.match(addonLoadHint('linux', 'arm64', '2.36'), /no prebuilt native addon for linux-arm64 \(glibc 2\.36\)/);
});
