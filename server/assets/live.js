// agentstream live view: the tenant's runs, a form to start one, and the live timeline of the
// selected run, streamed over Server-Sent Events and resumed by sequence after a reconnect.
//
// The token comes from the page's fragment (`/#token=…`, never sent to the server, removed from
// the address bar at once) or from the form, and is kept in sessionStorage. The stream is read
// with fetch (EventSource cannot send an Authorization header); on a dropped connection it
// reconnects with Last-Event-ID = the last sequence it has, so nothing is shown twice or lost.
'use strict';

(function () {
  const TOKEN_KEY = 'agentstream.token';
  const $ = (id) => document.getElementById(id);
  const state = { token: null, runId: null, follow: null, listTimer: null };

  function sleep(ms) {
    return new Promise((resolve) => setTimeout(resolve, ms));
  }

  function readFragment() {
    const params = new URLSearchParams(location.hash.replace(/^#/, ''));
    const token = params.get('token');
    if (token) {
      // A link must not silently move a signed-in tab to another token (another tenant would
      // then read what is typed here): ask first.
      const current = sessionStorage.getItem(TOKEN_KEY);
      const replace = !current || current === token || window.confirm(
        'This link signs this tab in with a different token (another tenant, possibly someone ' +
        "else's). Runs started here would then be theirs to read. Use the link's token?");
      if (replace) sessionStorage.setItem(TOKEN_KEY, token);
      params.delete('token');
      const rest = params.toString();
      history.replaceState(null, '', location.pathname + (rest ? `#${rest}` : ''));
    }
    state.token = sessionStorage.getItem(TOKEN_KEY);
    return params.get('run');
  }

  async function api(path, init) {
    const options = Object.assign({}, init || {});
    options.headers = Object.assign({ Authorization: `Bearer ${state.token}` }, options.headers || {});
    const response = await fetch(path, options);
    if (response.status === 401) {
      showLogin('That token was not accepted.');
      throw new Error('unauthorized');
    }
    return response;
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

  /** Parse SSE text into messages; returns the unparsed rest. */
  function parseSse(buffer, onMessage) {
    let at;
    while ((at = buffer.search(/\r?\n\r?\n/)) !== -1) {
      const block = buffer.slice(0, at);
      buffer = buffer.slice(at + buffer.slice(at).match(/^\r?\n\r?\n/)[0].length);
      const message = { event: 'message', data: [], id: null, retry: null, time: null };
      for (const line of block.split(/\r?\n/)) {
        if (!line || line.startsWith(':')) continue;
        const colon = line.indexOf(':');
        const field = colon === -1 ? line : line.slice(0, colon);
        let value = colon === -1 ? '' : line.slice(colon + 1);
        if (value.startsWith(' ')) value = value.slice(1);
        if (field === 'data') message.data.push(value);
        else if (field === 'event') message.event = value;
        else if (field === 'id') message.id = value;
        else if (field === 'retry') message.retry = Number(value);
        else if (field === 'time') message.time = Number(value);
      }
      if (message.data.length || message.retry !== null) onMessage(message);
    }
    return buffer;
  }

  /** Follow a run's stream until its terminal envelope, reconnecting as needed. */
  function follow(runId, timeline) {
    let stopped = false;
    let controller = null;
    let retryMs = 3000;
    let lastId = null;

    async function once() {
      controller = new AbortController();
      const headers = {};
      if (lastId !== null) headers['Last-Event-ID'] = lastId;
      const response = await api(`/v1/runs/${encodeURIComponent(runId)}/events`, { headers, signal: controller.signal });
      if (response.status === 204) return 'complete';
      if (!response.ok) {
        const text = await errorText(response);
        timeline.setConnection(text);
        return response.status >= 500 || response.status === 429 ? 'retry' : 'fatal';
      }
      timeline.setConnection(null);
      const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
      let buffer = '';
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        buffer = parseSse(buffer + value, (message) => {
          if (message.retry !== null && Number.isFinite(message.retry)) retryMs = message.retry;
          if (!message.data.length) return;
          const data = JSON.parse(message.data.join('\n'));
          if (message.event === 'gap') {
            timeline.gap(data);
          } else if (message.event === 'message') {
            // When the server received it (kept across reconnects), else now.
            timeline.push(data, Number.isFinite(message.time) ? message.time : Date.now());
          }
          if (message.id !== null) lastId = message.id;
        });
      }
      return timeline.isEnded() ? 'complete' : 'retry';
    }

    const done = (async () => {
      while (!stopped) {
        let outcome;
        try {
          outcome = await once();
        } catch (e) {
          if (stopped) return;
          outcome = e && e.message === 'unauthorized' ? 'fatal' : 'retry';
        }
        if (outcome === 'complete' || outcome === 'fatal') break;
        if (stopped) return;
        timeline.setConnection('reconnecting…');
        await sleep(Math.min(retryMs, 3000));
      }
      if (stopped) return;
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
    const runFromUrl = readFragment();
    if (!state.token) {
      showLogin('');
      return;
    }
    showApp();
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
