// agentstream live view: the tenant's runs, a form to start one, and the live timeline of the
// selected run, streamed over Server-Sent Events and resumed by sequence after a reconnect.
//
// The token comes from a one-time sign-in link (`/#code=…`, which `agentstream serve` prints:
// the code is exchanged for the token once, so the browser's history keeps nothing of use) or
// from the form, and is kept in sessionStorage, never in an address. The header names the
// tenant the tab is signed in as. The stream is read
// with fetch (EventSource cannot send an Authorization header); on a dropped connection it
// reconnects with Last-Event-ID = the last sequence it has (the SSE id: an envelope's sequence
// plus the deltas merged into it), so nothing is shown twice or lost.
'use strict';

(function () {
  const TOKEN_KEY = 'agentstream.token';
  const $ = (id) => document.getElementById(id);
  const state = { token: null, runId: null, follow: null, listTimer: null };

  function sleep(ms) {
    return new Promise((resolve) => setTimeout(resolve, ms));
  }

  /** The fragment's parameters, with the ones that sign in removed from the address at once. */
  function takeFragment() {
    const params = new URLSearchParams(location.hash.replace(/^#/, ''));
    const signIn = { code: params.get('code'), token: params.get('token') };
    if (signIn.code || signIn.token) {
      params.delete('code');
      params.delete('token');
      const rest = params.toString();
      history.replaceState(null, '', location.pathname + (rest ? `#${rest}` : ''));
    }
    return { signIn, run: params.get('run') };
  }

  /** Sign in from the fragment; a message for the login form when that did not work. */
  async function signInFrom({ code, token }) {
    if (token) {
      // Not taken: an address holding a token stays in the browser's history.
      return 'Links with a token are not accepted (the browser would keep the token in its history): ' +
        'paste the token here, or open the sign-in link `agentstream serve` printed.';
    }
    if (!code) return '';
    let response;
    try {
      response = await fetch('/v1/session', {
        method: 'POST',
        headers: { 'Content-Type': 'application/json' },
        body: JSON.stringify({ code }),
      });
    } catch (_) {
      return 'The server could not be reached to use the sign-in link.';
    }
    if (!response.ok) return errorText(response);
    const { token: given } = await response.json();
    sessionStorage.setItem(TOKEN_KEY, given);
    return '';
  }

  /** Show whose runs this tab shows. */
  async function showTenant() {
    try {
      const response = await api('/v1/whoami');
      if (response.ok) $('tenant').textContent = `tenant ${(await response.json()).tenant}`;
    } catch (_) {
      /* shown by api() */
    }
  }

  async function api(path, init) {
    const options = Object.assign({}, init || {});
    options.headers = Object.assign({ Authorization: `Bearer ${state.token}` }, options.headers || {});
    const response = await fetch(path, options);
    if (response.status === 401) {
      signOut('That token was not accepted.');
      throw new Error('unauthorized');
    }
    return response;
  }

  /** Forget the token (a rejected one would be sent every 2 s for ever) and show the form. */
  function signOut(message) {
    sessionStorage.removeItem(TOKEN_KEY);
    state.token = null;
    clearInterval(state.listTimer);
    if (state.follow) state.follow.stop();
    showLogin(message);
  }

  async function errorText(response) {
    try {
      const body = await response.json();
      return body.field ? `${body.message} (${body.field})` : body.message;
    } catch (_) {
      return `HTTP ${response.status}`;
    }
  }

  function showLogin(message) {
    $('login').hidden = false;
    $('app').hidden = true;
    $('login-message').textContent = message || '';
  }

  function showApp() {
    $('login').hidden = true;
    $('app').hidden = false;
  }

  // ---- the run list ------------------------------------------------------------------------

  async function refreshList() {
    let body;
    try {
      const response = await api('/v1/runs');
      if (!response.ok) return;
      body = await response.json();
    } catch (_) {
      return;
    }
    const list = $('runs');
    list.textContent = '';
    for (const run of body.runs) {
      const li = document.createElement('li');
      li.className = `run-item${run.id === state.runId ? ' selected' : ''}`;
      li.dataset.runId = run.id;
      const status = document.createElement('span');
      status.className = `badge ${run.status}`;
      status.textContent = run.status;
      const agent = document.createElement('span');
      agent.className = 'run-agent';
      agent.textContent = run.agent;
      const prompt = document.createElement('span');
      prompt.className = 'run-prompt';
      prompt.textContent = run.prompt;
      li.append(status, agent, prompt);
      li.addEventListener('click', () => select(run.id));
      list.append(li);
    }
    if (!body.runs.length) {
      const li = document.createElement('li');
      li.className = 'empty';
      li.textContent = 'No runs yet.';
      list.append(li);
    }
  }

  async function loadAgents() {
    try {
      const response = await api('/v1/agents');
      if (!response.ok) return;
      const { agents } = await response.json();
      const select = $('agent');
      select.textContent = '';
      for (const name of agents) {
        const option = document.createElement('option');
        option.value = name;
        option.textContent = name;
        select.append(option);
      }
    } catch (_) {
      /* shown by api() */
    }
  }

  async function startRun(event) {
    event.preventDefault();
    const body = { agent: $('agent').value, prompt: $('prompt').value };
    if ($('model').value.trim()) body.model = $('model').value.trim();
    $('start-message').textContent = '';
    const response = await api('/v1/runs', {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify(body),
    });
    if (response.status !== 201) {
      $('start-message').textContent = await errorText(response);
      return;
    }
    const run = await response.json();
    $('prompt').value = '';
    await select(run.id);
    refreshList();
  }

  // ---- one run -------------------------------------------------------------------------------

  async function select(runId) {
    if (state.follow) state.follow.stop();
    state.runId = runId;
    history.replaceState(null, '', `${location.pathname}#run=${encodeURIComponent(runId)}`);
    $('run-title').textContent = runId;
    $('cancel').hidden = false;
    const timeline = new window.AgentstreamTimeline($('timeline'), { showRaw: $('show-raw').checked });
    state.follow = follow(runId, timeline);
    for (const li of document.querySelectorAll('.run-item')) {
      li.classList.toggle('selected', li.dataset.runId === runId);
    }
  }

  async function cancelRun() {
    if (!state.runId) return;
    const response = await api(`/v1/runs/${encodeURIComponent(state.runId)}/cancel`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ reason: 'cancelled from the live view' }),
    });
    if (!response.ok) $('run-message').textContent = await errorText(response);
    refreshList();
  }

  /**
   * An SSE parser fed the response's text as it arrives; calls onMessage for each message. It
   * looks at each character once (a 16 MiB envelope read 16 KiB at a time was rescanned from
   * its start on every read: seconds of a frozen tab). Lines end in LF, CRLF or CR, also split
   * between two reads.
   */
  function sseParser(onMessage) {
    const fresh = () => ({ event: 'message', data: [], id: null, retry: null, time: null });
    let message = fresh();
    let partial = ''; // the start of a line whose end has not come yet
    let afterCR = false; // the last read ended in CR: an LF starting the next is the same line end
    function line(text) {
      if (!text) {
        if (message.data.length || message.retry !== null) onMessage(message);
        message = fresh();
        return;
      }
      if (text.startsWith(':')) return;
      const colon = text.indexOf(':');
      const field = colon === -1 ? text : text.slice(0, colon);
      let value = colon === -1 ? '' : text.slice(colon + 1);
      if (value.startsWith(' ')) value = value.slice(1);
      if (field === 'data') message.data.push(value);
      else if (field === 'event') message.event = value;
      else if (field === 'id') message.id = value;
      else if (field === 'retry') message.retry = Number(value);
      else if (field === 'time') message.time = Number(value);
    }
    return function feed(chunk) {
      let start = afterCR && chunk.startsWith('\n') ? 1 : 0;
      afterCR = false;
      const ends = /\r\n|\r|\n/g;
      ends.lastIndex = start;
      let end;
      while ((end = ends.exec(chunk)) !== null) {
        const text = partial + chunk.slice(start, end.index);
        partial = '';
        start = end.index + end[0].length;
        afterCR = end[0] === '\r' && start === chunk.length;
        line(text);
      }
      partial += chunk.slice(start);
    };
  }

  /** Follow a run's stream until its terminal envelope, reconnecting as needed. */
  function follow(runId, timeline) {
    let stopped = false;
    let controller = null;
    let retryMs = 3000;
    let lastId = null;
    // The last sequence number a gap notice reported missing: a later notice of numbers up to
    // it (the `evicted` one after a `too_slow`) is not shown again.
    let reported = -1;
    // Failed attempts in a row: the wait before the next one doubles (up to 30 s).
    let failures = 0;
    let waitAtLeastMs = 0;

    /** A gap notice: shown once per missing range; without `resumeFrom` (the response ends with
     * it) the numbers it reported are skipped, so that the reconnect does not ask for them again
     * (a finished run of which nothing is left would be asked for the same gap for ever). */
    function gap(data) {
      const missing = Number.isInteger(data.missing) && data.missing > 0 ? data.missing : null;
      const after = Number.isInteger(data.after) ? data.after : null;
      const through = missing === null ? null : (after === null ? missing - 1 : after + missing);
      if (through === null || through > reported) timeline.gap(data);
      if (through !== null) reported = Math.max(reported, through);
      if (!Number.isInteger(data.resumeFrom) && through !== null && (lastId === null || through > Number(lastId))) {
        lastId = String(through);
      }
    }

    async function once() {
      controller = new AbortController();
      const headers = {};
      if (lastId !== null) headers['Last-Event-ID'] = lastId;
      const response = await api(`/v1/runs/${encodeURIComponent(runId)}/events`, { headers, signal: controller.signal });
      if (response.status === 204) return 'complete';
      if (!response.ok) {
        const text = await errorText(response);
        timeline.setConnection(text);
        const after = Number(response.headers.get('Retry-After'));
        waitAtLeastMs = Number.isFinite(after) && after > 0 ? Math.min(after, 30) * 1000 : 0;
        return response.status >= 500 || response.status === 429 ? 'retry' : 'fatal';
      }
      timeline.setConnection(null);
      const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
      let broken = null;
      const feed = sseParser((message) => {
        if (broken) return;
        if (message.retry !== null && Number.isFinite(message.retry)) retryMs = message.retry;
        if (!message.data.length) return;
        let data;
        try {
          data = JSON.parse(message.data.join('\n'));
        } catch (_) {
          broken = 'The stream is not agentstream\'s (data that is not JSON): a proxy in between?';
          return;
        }
        failures = 0;
        if (message.event === 'gap') {
          gap(data);
        } else if (message.event === 'notice') {
          // The cluster's messaging went away (nothing can arrive meanwhile) or came back.
          timeline.setConnection(data.reason === 'backend_restored' ? null : data.message || String(data.reason));
        } else if (message.event === 'message') {
          // When the server received it (kept across reconnects), else now.
          timeline.push(data, Number.isFinite(message.time) ? message.time : Date.now());
        }
        if (message.id !== null) lastId = message.id;
      });
      try {
        while (!broken) {
          const { value, done } = await reader.read();
          if (done) break;
          feed(value);
        }
      } finally {
        // Whatever ended the reading (a bad message, an error), the connection goes with it:
        // a browser has only a few per server.
        controller.abort();
      }
      if (broken) {
        timeline.setConnection(broken);
        return 'fatal';
      }
      return timeline.isEnded() ? 'complete' : 'retry';
    }

    const done = (async () => {
      let outcome = 'retry';
      while (!stopped) {
        try {
          outcome = await once();
        } catch (e) {
          if (stopped) return;
          outcome = e && e.message === 'unauthorized' ? 'fatal' : 'retry';
        }
        if (outcome === 'complete' || outcome === 'fatal') break;
        if (stopped) return;
        failures += 1;
        timeline.setConnection('reconnecting…');
        const backoff = Math.min(Math.min(retryMs, 3000) * 2 ** Math.min(failures - 1, 4), 30000);
        await sleep(Math.max(backoff * (0.75 + Math.random() / 2), waitAtLeastMs));
        waitAtLeastMs = 0;
      }
      if (stopped || outcome === 'fatal') return;
      timeline.setConnection(null);
      $('cancel').hidden = true;
      try {
        const response = await api(`/v1/runs/${encodeURIComponent(runId)}`);
        if (response.ok) timeline.setResult((await response.json()).result);
      } catch (_) {
        /* the timeline already shows the terminal */
      }
      refreshList();
    })();

    return {
      stop() {
        stopped = true;
        if (controller) controller.abort();
      },
      /** Drop the current connection as a network failure would (the follower resumes). */
      dropConnection() {
        if (controller) controller.abort();
      },
      done,
      timeline,
    };
  }

  // ---- start -------------------------------------------------------------------------------

  async function boot() {
    const { signIn, run: runFromUrl } = takeFragment();
    const message = await signInFrom(signIn);
    state.token = sessionStorage.getItem(TOKEN_KEY);
    if (!state.token) {
      showLogin(message);
      return;
    }
    showApp();
    if (message) $('run-message').textContent = message;
    await showTenant();
    await loadAgents();
    await refreshList();
    if (runFromUrl) await select(runFromUrl);
    clearInterval(state.listTimer);
    state.listTimer = setInterval(() => {
      if (!document.hidden) refreshList();
    }, 2000);
  }

  document.addEventListener('DOMContentLoaded', () => {
    $('login-form').addEventListener('submit', (event) => {
      event.preventDefault();
      sessionStorage.setItem(TOKEN_KEY, $('token').value.trim());
      $('token').value = '';
      boot();
    });
    $('start-form').addEventListener('submit', (event) => startRun(event).catch(() => {}));
    $('cancel').addEventListener('click', () => cancelRun().catch(() => {}));
    $('show-raw').addEventListener('change', () => state.runId && select(state.runId));
    $('logout').addEventListener('click', () => {
      sessionStorage.removeItem(TOKEN_KEY);
      location.hash = '';
      location.reload();
    });
    boot();
  });

  // For tests and debugging: the current follower (its timeline, dropConnection()).
  window.agentstreamLive = { current: () => state.follow, select };
})();
