// The live run view in a real browser: Debian's chromium, headless, driven by playwright-core.
// Starts `agentstream serve` with the fake harness as the agent, opens the page, starts a run
// from its form, sees the tool call appear and the run complete; follows a slow run through
// dropped connections (resume by Last-Event-ID, nothing shown twice); opens the offline page
// `agentstream view` writes. Screenshots go to target/server-webtest/.
//
//   AGENTSTREAM_BIN             the agentstream binary (default target/debug/agentstream)
//   AGENTSTREAM_FAKE_HARNESS    the fake harness (default target/debug/fake-harness)
//   CHROMIUM                    the browser (default /usr/bin/chromium)

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, execFileSync } from 'node:child_process';
import { createInterface } from 'node:readline';
import { mkdirSync, writeFileSync, existsSync } from 'node:fs';
import { join, resolve, dirname } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { chromium } from 'playwright-core';

const here = dirname(fileURLToPath(import.meta.url));
const repo = resolve(here, '..', '..');
const bin = process.env.AGENTSTREAM_BIN || join(repo, 'target', 'debug', 'agentstream');
const fake = process.env.AGENTSTREAM_FAKE_HARNESS || join(repo, 'target', 'debug', 'fake-harness');
const executablePath = process.env.CHROMIUM || '/usr/bin/chromium';
const out = join(repo, 'target', 'server-webtest');
const golden = (agent, c) => join(repo, 'tests', 'golden', agent, c);
const FLAGS = [
  '--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking',
  '--disable-component-update', '--no-first-run',
];

let server;
let base;
let token;
let link;
let browser;

for (const [what, path] of [['agentstream', bin], ['fake harness', fake], ['chromium', executablePath]]) {
  if (!existsSync(path)) {
    throw new Error(`${what} not found at ${path}: build with \`cargo build -p agentstream-cli --bins\` / install with .ci/install-server.sh`);
  }
}

function toml(s) {
  return JSON.stringify(s);
}

before(async () => {
  mkdirSync(out, { recursive: true });
  const config = join(out, 'serve.toml');
  const agent = (delay) => `bin = ${toml(fake)}\nenv = { AGENTSTREAM_FAKE_TRACE = ${toml(golden('claude', 's2-bash'))}, AGENTSTREAM_FAKE_DELAY_MS = "${delay}" }\n`;
  const flood = `bin = ${toml(fake)}\nenv = { AGENTSTREAM_FAKE_TRACE = ${toml(golden('claude', 's1-text'))}, AGENTSTREAM_FAKE_FLOOD = "100000" }\n`;
  writeFileSync(config, `[agents.claude]\n${agent(150)}\n[agents.slow]\nharness = "claude"\n${agent(700)}\n[agents.flood]\nharness = "claude"\n${flood}`);
  server = spawn(bin, ['serve', '--config', config, '--listen', '127.0.0.1:0'], { stdio: ['ignore', 'pipe', 'inherit'] });
  const lines = createInterface({ input: server.stdout });
  for await (const line of lines) {
    const listening = line.match(/listening on (http:\/\/\S+)/);
    if (listening) base = listening[1];
    const shown = line.match(/\(shown once, not stored\): (\S+)/);
    if (shown) token = shown[1];
    const signIn = line.match(/live view \(the link signs in once\): (\S+)/);
    if (signIn) link = signIn[1];
    if (line.includes(' try: curl')) break;
  }
  assert.ok(base && token && link, 'serve announced its address, token and sign-in link');
  assert.ok(!link.includes(token), 'the link holds no token');
  browser = await chromium.launch({ executablePath, headless: true, args: FLAGS });
});

after(async () => {
  if (browser) await browser.close();
  if (server) {
    const exited = new Promise((r) => server.once('exit', r));
    server.kill('SIGTERM');
    await exited;
  }
});

/** A page that fails the test on a script error or a request to anywhere but `allowed`. */
async function newPage(allowed) {
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  const page = await context.newPage();
  const problems = [];
  page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
  page.on('console', (m) => m.type() === 'error' && !m.text().includes('net::ERR_ABORTED') && problems.push(`console: ${m.text()}`));
  page.on('request', (r) => {
    if (!r.url().startsWith(allowed)) problems.push(`request to ${r.url()}`);
  });
  return { page, problems };
}

async function api(path, init = {}) {
  const response = await fetch(`${base}${path}`, {
    ...init,
    headers: { Authorization: `Bearer ${token}`, 'Content-Type': 'application/json', ...(init.headers || {}) },
  });
  return { status: response.status, body: await response.json().catch(() => null) };
}

test('a run started from the page shows its tool call and completes', async () => {
  const { page, problems } = await newPage(base);
  await page.goto(link);
  await page.waitForSelector('#start-form', { state: 'visible' });
  assert.ok(!page.url().includes('code='), 'the code leaves the address bar at once');
  assert.deepEqual(await page.evaluate(() => Object.values(sessionStorage)), [token], 'the link gave the token');
  assert.equal(await page.locator('#tenant').innerText(), 'tenant local', 'the header says whose runs these are');
  await page.selectOption('#agent', 'claude');
  await page.fill('#prompt', 'List the files');
  await page.click('#start-form button[type=submit]');
  // Live: the tool call appears while the run is still going.
  const tool = page.locator('.entry.tool-call').first();
  await tool.waitFor({ timeout: 15000 });
  assert.equal(await page.getAttribute('#run-status', 'data-status'), 'running', 'seen while running');
  await page.waitForSelector('#run-status[data-status="completed"]', { timeout: 20000 });
  assert.equal(await tool.getAttribute('data-status'), 'completed');
  assert.match(await tool.locator('.tool-title').innerText(), /ls/);
  assert.ok((await tool.locator('.duration').innerText()).length > 0, 'a duration');
  assert.match(await page.locator('.entry.message').last().innerText(), /three files/);
  assert.match(await page.locator('#run-usage').innerText(), /in · .* out/);
  assert.match(await page.locator('#run-cost').innerText(), /^\$0\.01/);
  await page.waitForSelector('.run-item .badge.completed');
  await page.screenshot({ path: join(out, 'live-view.png'), fullPage: true });
  assert.deepEqual(problems, []);
});

test('a link with a token is refused, and a sign-in link works once', async () => {
  const { page, problems } = await newPage(base);
  const stored = () => page.evaluate(() => Object.values(sessionStorage));
  // A token in an address would stay in the browser's history: not taken, and removed.
  await page.goto(`${base}/#token=${token}`);
  await page.waitForSelector('#login', { state: 'visible' });
  assert.match(await page.locator('#login-message').innerText(), /not accepted/);
  assert.deepEqual(await stored(), []);
  assert.ok(!page.url().includes(token));
  // The first test used the sign-in link: it gives nothing a second time.
  await page.goto(link);
  await page.reload();
  await page.waitForSelector('#login', { state: 'visible' });
  assert.match(await page.locator('#login-message').innerText(), /used already/);
  assert.deepEqual(await stored(), []);
  // The form still signs in.
  await page.fill('#token', token);
  await page.click('#login-form button[type=submit]');
  await page.waitForSelector('#start-form', { state: 'visible' });
  assert.deepEqual(await stored(), [token]);
  // The used code's answer is a 401, which the browser logs; nothing else went wrong.
  assert.deepEqual(problems.filter((p) => !p.includes('status of 401')), []);
  assert.equal(problems.length, 1);
});

test('a token the server rejects is forgotten: the page asks for another and stops asking with it', async () => {
  const { page } = await newPage(base);
  let sent = 0;
  page.on('request', (r) => {
    if ((r.headers().authorization || '').includes('no-longer-valid')) sent += 1;
  });
  // What a tab keeps across a restart of `agentstream serve` (which prints a new token).
  await page.goto(`${base}/`);
  await page.evaluate(() => sessionStorage.setItem('agentstream.token', 'no-longer-valid'));
  await page.reload();
  await page.waitForSelector('#login', { state: 'visible' });
  assert.match(await page.locator('#login-message').innerText(), /not accepted/);
  assert.deepEqual(await page.evaluate(() => Object.values(sessionStorage)), []);
  const afterRejection = sent;
  await page.waitForTimeout(4500); // two rounds of the run list's 2 s polling
  assert.equal(sent, afterRejection, 'no request with the rejected token after it was rejected');
});

test('the raw output of a long run keeps its newest lines and counts the rest', async () => {
  const { status, body } = await api('/v1/runs', { method: 'POST', body: JSON.stringify({ agent: 'flood', prompt: 'x' }) });
  assert.equal(status, 201);
  const { page, problems } = await signedIn();
  await page.check('#show-raw');
  await page.evaluate((id) => window.agentstreamLive.select(id), body.id);
  await page.waitForSelector('#run-status[data-status="completed"]', { timeout: 30000 });
  const shown = await page.locator('.entry.raw').count();
  assert.equal(shown, 2000, 'the newest 2000 raw entries');
  assert.match(await page.locator('.entry.raw-dropped').innerText(), /^\d+ earlier output lines? not shown/);
  assert.deepEqual(problems, []);
});

/** A page signed in through the form. */
async function signedIn() {
  const { page, problems } = await newPage(base);
  await page.goto(`${base}/`);
  await page.fill('#token', token);
  await page.click('#login-form button[type=submit]');
  await page.waitForSelector('#start-form', { state: 'visible' });
  return { page, problems };
}

test('the live timeline resumes after dropped connections without showing anything twice', async () => {
  const { status, body } = await api('/v1/runs', { method: 'POST', body: JSON.stringify({ agent: 'slow', prompt: 'List the files' }) });
  assert.equal(status, 201);
  const { page, problems } = await signedIn();
  await page.evaluate((id) => window.agentstreamLive.select(id), body.id);
  await page.waitForSelector('.entry', { timeout: 15000 });
  let drops = 0;
  while ((await page.getAttribute('#run-status', 'data-status')) === 'running' && drops < 4) {
    await page.evaluate(() => window.agentstreamLive.current().dropConnection());
    drops += 1;
    await page.waitForTimeout(900);
  }
  assert.ok(drops >= 2, `dropped the stream ${drops} times while the run went on`);
  await page.waitForSelector('#run-status[data-status="completed"]', { timeout: 30000 });
  assert.equal(await page.locator('.entry.tool-call').count(), 1, 'one tool call, not repeated');
  // The harness printed the call and its result 700 ms apart: the duration is measured from
  // when the server received them, even though this page may have got both in one replay.
  const duration = await page.locator('.entry.tool-call .duration').innerText();
  const ms = duration.endsWith(' ms') ? Number.parseFloat(duration) : Number.parseFloat(duration) * 1000;
  assert.ok(ms >= 500 && ms < 5000, `the tool's duration: ${duration}`);
  const messages = await page.locator('.entry.message .text').allInnerTexts();
  assert.deepEqual(messages, ["I'll list the files.", 'The directory contains three files: README.md, hello.py and notes.txt.']);
  await page.screenshot({ path: join(out, 'live-view-resumed.png'), fullPage: true });
  assert.deepEqual(problems, []);
});

/** `agentstream view` of `input` written to `name` under the output folder, opened offline. */
async function offlinePage(agent, input, name, timeout) {
  const file = join(out, name);
  execFileSync(bin, ['view', '--agent', agent, input, '-o', file], { stdio: 'ignore' });
  const url = pathToFileURL(file).href;
  const opened = await newPage(url);
  await opened.page.goto(url, timeout ? { timeout } : undefined);
  return opened;
}

test('agentstream view writes a page that renders the run offline', async () => {
  const { page, problems } = await offlinePage('claude', golden('claude', 's3-read-edit.input.jsonl'), 'run.html');
  await page.waitForSelector('#run-status[data-status="completed"]');
  const tools = page.locator('.entry.tool-call');
  assert.equal(await tools.count(), 3, 'Read, Edit, Bash');
  assert.deepEqual(await tools.evaluateAll((els) => els.map((e) => e.dataset.status)), ['completed', 'completed', 'completed']);
  assert.equal(await page.locator('.diff .diff-new').count() > 0, true, 'the edit shows its diff');
  assert.match(await page.locator('#run-cost').innerText(), /^\$/);
  await page.screenshot({ path: join(out, 'offline-view.png'), fullPage: true });
  assert.deepEqual(problems, []);
});

test('a tool call announced after its result stays ended, not unfinished', async () => {
  // kimi/e-odd-lines: call_late's result comes before its call.
  const { page, problems } = await offlinePage('kimi', golden('kimi', 'e-odd-lines.input.jsonl'), 'late-call.html');
  await page.waitForSelector('#run-status:not([data-status="running"])');
  const late = page.locator('.entry.tool-call', { hasText: 'echo late' });
  assert.equal(await late.count(), 1);
  assert.equal(await late.evaluate((e) => e.dataset.status), 'completed');
  // The call's input shows, and the result's output stays.
  assert.equal(await late.locator('.tool-input').evaluate((e) => e.hidden), false);
  assert.match(await late.locator('.tool-input pre').textContent(), /echo late/);
  assert.match(await late.locator('.tool-texts').innerText(), /late/);
  assert.deepEqual(problems, []);
});

test('a flood of text deltas renders as one block, every character once', async () => {
  // 30,000 deltas of 200 characters: a page that copied the block for every delta took a minute
  // (past this test's timeout); appending each piece takes a moment.
  const trace = join(out, 'flood.jsonl');
  const piece = 'abcdefghij'.repeat(20);
  const lines = [JSON.stringify({ type: 'system', subtype: 'init', session_id: 's', model: 'm', tools: [] })];
  for (let i = 0; i < 30000; i++) {
    const event = { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: piece } };
    lines.push(JSON.stringify({ type: 'stream_event', event, session_id: 's', parent_tool_use_id: null }));
  }
  writeFileSync(trace, lines.join('\n') + '\n');
  const { page, problems } = await offlinePage('claude', trace, 'flood.html', 20000);
  const blocks = page.locator('.entry.message .text');
  assert.equal(await blocks.count(), 1);
  assert.equal(await blocks.evaluate((e) => e.textContent.length), 30000 * piece.length);
  assert.deepEqual(problems, []);
});
