// agentstream run timeline: renders a run's stream envelopes ({runId, sequence, channel, event,
// coalesced?}) as a timeline a person can read: messages, thinking, tool calls with status and
// duration, plans, errors, token usage and cost. Used by the live view (fed over SSE) and by the
// offline page `agentstream view` writes (fed from embedded JSON). No dependencies, no network;
// every piece of data is inserted as text, never as HTML.
'use strict';

(function (global) {
  const KIND_LABEL = {
    read: 'read', edit: 'edit', delete: 'delete', move: 'move', search: 'search',
    execute: 'run', think: 'think', fetch: 'fetch', switch_mode: 'mode', other: 'tool',
  };
  const TERMINAL = {
    run_complete: 'completed', run_failed: 'failed', run_interrupted: 'cancelled',
    run_background_complete: 'completed', run_background_failed: 'failed',
    command_complete: 'completed', command_failed: 'failed', command_interrupted: 'cancelled',
    command_background_complete: 'completed', command_background_failed: 'failed',
  };
  const OUTPUT_PREVIEW = 4000;

  function el(tag, className, text) {
    const node = document.createElement(tag);
    if (className) node.className = className;
    if (text !== undefined && text !== null) node.textContent = String(text);
    return node;
  }

  function parseTime(iso) {
    if (typeof iso !== 'string') return null;
    const t = Date.parse(iso);
    return Number.isFinite(t) ? t : null;
  }

  function formatDuration(ms) {
    if (ms === null || ms === undefined || !Number.isFinite(ms) || ms < 0) return '';
    if (ms < 1000) return `${Math.round(ms)} ms`;
    if (ms < 60000) return `${(ms / 1000).toFixed(ms < 10000 ? 2 : 1)} s`;
    const m = Math.floor(ms / 60000);
    return `${m} min ${Math.round((ms % 60000) / 1000)} s`;
  }

  function formatCount(n) {
    return typeof n === 'number' ? n.toLocaleString('en-US') : '–';
  }

  function textOf(block) {
    if (!block) return '';
    if (block.type === 'text') return block.text || '';
    if (block.type === 'image') return `[image ${block.mimeType || ''}]`;
    return '';
  }

  /** The most raw output entries (stdout, stderr: a line or a few each) a timeline keeps in the page. */
  const MAX_RAW_LINES = 2000;

  class Timeline {
    /**
     * @param {HTMLElement} root where the timeline goes (emptied)
     * @param {{showRaw?: boolean}} [options]
     */
    constructor(root, options) {
      this.root = root;
      this.options = options || {};
      this.root.textContent = '';
      this.root.classList.add('agentstream-timeline');
      this.summary = el('section', 'summary');
      this.entries = el('ol', 'entries');
      this.root.append(this.summary, this.entries);
      this.lastSequence = -1;
      this.status = 'running';
      this.tools = new Map();
      this.current = null; // the open message/thought block: {kind, messageId, body}
      this.plan = null;
      this.usage = { calls: { prompt: 0, completion: 0, cached: 0, cost: 0, seen: false }, run: null };
      this.startedAt = null;
      this.endedAt = null;
      this.counts = { tools: 0, errors: 0, events: 0 };
      this.facts = { runId: null, sessionId: null, model: null };
      this.result = null;
      // The raw output entries shown (see raw()): rawLines[rawFirst..] are in the page;
      // rawDropped counts the lines of those taken out.
      this.rawLines = [];
      this.rawFirst = 0;
      this.rawDropped = 0;
      this.rawNote = null;
      this.renderSummary();
    }

    /** Add one envelope. Late or repeated sequences are ignored (never rendered twice). */
    push(env, arrivedAt) {
      if (!env || typeof env.sequence !== 'number' || env.sequence <= this.lastSequence) return false;
      this.lastSequence = env.sequence + (env.coalesced || 0);
      const at = typeof arrivedAt === 'number' ? arrivedAt : null;
      this.counts.events += 1;
      this.facts.runId = env.runId || this.facts.runId;
      switch (env.channel) {
        case 'content': this.content(env.event, at, env.sequence); break;
        case 'lifecycle': this.lifecycle(env.event, at); break;
        case 'stdout': case 'stderr': this.raw(env.channel, env.event); break;
        default: break; // a channel this page does not know: skipped
      }
      this.scheduleSummary();
      return true;
    }

    /** An explicit gap notice ({type: "gap", missing, after, resumeFrom, message}). */
    gap(notice) {
      this.closeBlock();
      const li = el('li', 'entry gap');
      li.append(el('span', 'badge warn', 'gap'), el('span', null, notice.message || `${notice.missing} events missing`));
      this.entries.append(li);
      if (typeof notice.resumeFrom === 'number') this.lastSequence = Math.max(this.lastSequence, notice.resumeFrom - 1);
    }

    /** The run's result (from the API or a replay), shown in the summary. */
    setResult(result) {
      this.result = result || null;
      this.renderSummary();
    }

    /** A notice about the connection (reconnecting, …), or null to clear it. */
    setConnection(text) {
      this.connection = text;
      this.renderSummary();
    }

    isEnded() {
      return this.status !== 'running';
    }

    closeBlock() {
      this.current = null;
    }

    content(ev, at, sequence) {
      if (!ev || !ev.update) return;
      const u = ev.update;
      if (ev.sessionId) this.facts.sessionId = ev.sessionId;
      if (ev.model) this.facts.model = ev.model;
      // The harness's own clock where it stamps its lines, else the arrival time (live only).
      const time = { wire: parseTime(ev.timestamp), at };
      switch (u.sessionUpdate) {
        case 'agent_message_chunk': this.text('message', 'Agent', u.content, ev.messageId); break;
        case 'agent_thought_chunk': this.text('thought', 'Thinking', u.content, ev.messageId); break;
        case 'user_message_chunk': this.text('user', 'User', u.content, ev.messageId); break;
        case 'tool_call': this.toolCall(u, time, ev.parentToolCallId); break;
        case 'tool_call_update': this.toolUpdate(u, time); break;
        case 'plan': this.planUpdate(u.entries || []); break;
        case 'error': this.error(u.message, u.fatal); break;
        case 'usage': this.usageUpdate(u.scope, u.usage || {}); break;
        default: break;
      }
      void sequence;
    }

    text(kind, label, block, messageId) {
      const piece = textOf(block);
      if (!piece) return;
      const cur = this.current;
      if (cur && cur.kind === kind && (cur.messageId === (messageId || null) || !messageId || !cur.messageId)) {
        // A text node per piece: `textContent +=` copied the whole block again for every piece
        // (a flood of deltas froze the tab for a minute).
        cur.body.append(piece);
        return;
      }
      let li;
      let body;
      if (kind === 'thought') {
        li = el('li', 'entry thought');
        const details = el('details');
        details.append(el('summary', null, label));
        body = el('div', 'text');
        details.append(body);
        li.append(details);
      } else {
        li = el('li', `entry ${kind}`);
        li.append(el('div', 'who', label));
        body = el('div', 'text');
        li.append(body);
      }
      body.textContent = piece;
      this.entries.append(li);
      this.current = { kind, messageId: messageId || null, body };
    }

    toolCall(u, time, parent) {
      this.closeBlock();
      let tool = this.tools.get(u.toolCallId);
      if (!tool) {
        this.counts.tools += 1;
        const li = el('li', 'entry tool-call');
        li.dataset.toolCallId = u.toolCallId;
        const head = el('div', 'tool-head');
        const kind = el('span', 'tool-kind');
        const title = el('span', 'tool-title');
        const name = el('span', 'tool-name');
        const status = el('span', 'badge status');
        const duration = el('span', 'duration');
        head.append(kind, title, name, status, duration);
        const input = el('details', 'tool-input');
        input.append(el('summary', null, 'input'), el('pre'));
        const output = el('div', 'tool-output');
        const diffs = el('div', 'tool-diffs');
        const texts = el('div', 'tool-texts');
        output.append(diffs, texts);
        li.append(head, input, output);
        this.entries.append(li);
        tool = { li, kind, title, name, status, duration, input, diffs, texts, startedAt: time, state: null };
        this.tools.set(u.toolCallId, tool);
      }
      // (A call announced after its result, an odd harness's order, reaches here with its entry
      // made from the result: it gets what the call says, but keeps its end and its output.)
      if (parent) tool.li.classList.add('subagent');
      tool.kind.textContent = KIND_LABEL[u.kind] || u.kind || 'tool';
      tool.title.textContent = u.title || u.toolName || u.toolCallId;
      tool.name.textContent = u.toolName && u.toolName !== u.title ? u.toolName : '';
      const pre = tool.input.querySelector('pre');
      if (u.rawInput !== undefined) pre.textContent = JSON.stringify(u.rawInput, null, 2);
      tool.input.hidden = !pre.textContent;
      const ended = tool.state === 'completed' || tool.state === 'failed';
      if (u.content) this.toolContent(tool, ended ? u.content.filter((item) => item.type === 'diff') : u.content);
      if (!ended || u.status === 'completed' || u.status === 'failed') this.toolStatus(tool, u.status || 'pending', time);
    }

    toolUpdate(u, time) {
      let tool = this.tools.get(u.toolCallId);
      if (!tool) {
        // A result whose call was never seen: still shown.
        this.toolCall({ toolCallId: u.toolCallId, title: u.title || u.toolCallId, kind: 'other', status: 'in_progress' }, time);
        tool = this.tools.get(u.toolCallId);
      }
      this.closeBlock();
      if (u.title) tool.title.textContent = u.title;
      if (u.content) this.toolContent(tool, u.content);
      if (u.status) this.toolStatus(tool, u.status, time);
    }

    toolStatus(tool, state, time) {
      tool.state = state;
      tool.li.dataset.status = state;
      tool.status.textContent = state.replace('_', ' ');
      tool.status.className = `badge status ${state}`;
      if (state === 'completed' || state === 'failed') {
        // Both ends on the same clock: the harness's if it stamped both, else arrival times.
        const start = tool.startedAt;
        const ms = start.wire !== null && time.wire !== null ? time.wire - start.wire
          : start.at !== null && time.at !== null ? time.at - start.at : null;
        tool.duration.textContent = formatDuration(ms);
      }
    }

    /** Content of a call or an update: its diffs replace the diffs shown, its text the text
     *  shown (an update with the result keeps the diff the call announced). */
    toolContent(tool, content) {
      const diffs = content.filter((item) => item.type === 'diff');
      const texts = content.filter((item) => item.type === 'content').map((item) => textOf(item.content)).filter(Boolean);
      if (diffs.length) {
        tool.diffs.textContent = '';
        for (const item of diffs) {
          const diff = el('div', 'diff');
          diff.append(el('div', 'diff-path', item.path));
          if (item.oldText !== null && item.oldText !== undefined) diff.append(el('pre', 'diff-old', item.oldText));
          diff.append(el('pre', 'diff-new', item.newText));
          tool.diffs.append(diff);
        }
      }
      if (texts.length) {
        tool.texts.textContent = '';
        for (const text of texts) {
          const pre = el('pre', 'out');
          pre.textContent = text.length > OUTPUT_PREVIEW
            ? `${text.slice(0, OUTPUT_PREVIEW)}\n… (${formatCount(text.length - OUTPUT_PREVIEW)} more characters)`
            : text;
          tool.texts.append(pre);
        }
      }
    }

    planUpdate(entries) {
      this.closeBlock();
      if (!this.plan || this.entries.lastElementChild !== this.plan) {
        this.plan = el('li', 'entry plan');
        this.entries.append(this.plan);
      }
      this.plan.textContent = '';
      this.plan.append(el('div', 'who', 'Plan'));
      const list = el('ul');
      for (const e of entries) {
        const item = el('li', `plan-${e.status}`);
        item.append(el('span', 'mark', e.status === 'completed' ? '✓' : e.status === 'in_progress' ? '▸' : '○'), el('span', null, e.content));
        list.append(item);
      }
      this.plan.append(list);
    }

    error(message, fatal) {
      this.closeBlock();
      this.counts.errors += 1;
      const li = el('li', 'entry error');
      li.append(el('span', 'badge failed', fatal ? 'fatal error' : 'error'), el('span', 'text', message));
      this.entries.append(li);
    }

    usageUpdate(scope, usage) {
      if (scope === 'run') {
        this.usage.run = usage;
      } else {
        const c = this.usage.calls;
        c.prompt += usage.promptTokens || 0;
        c.completion += usage.completionTokens || 0;
        c.cached += usage.cachedTokens || 0;
        c.cost += usage.costUsd || 0;
        c.seen = true;
      }
    }

    lifecycle(ev, at) {
      if (!ev) return;
      const time = parseTime(ev.timestamp) ?? at;
      if (ev.reason === 'run_start' || ev.reason === 'command_start') {
        this.startedAt = time;
        return;
      }
      const end = TERMINAL[ev.reason];
      if (!end) return;
      this.closeBlock();
      this.status = end;
      this.endedAt = time;
      for (const tool of this.tools.values()) {
        if (tool.state === 'pending' || tool.state === 'in_progress') {
          tool.li.dataset.status = 'unfinished';
          tool.status.textContent = 'unfinished';
          tool.status.className = 'badge status failed';
        }
      }
      const li = el('li', `entry terminal ${end}`);
      li.append(el('span', `badge ${end}`, `run ${end}`));
      this.entries.append(li);
    }

    raw(channel, text) {
      if (!this.options.showRaw || typeof text !== 'string') return;
      this.closeBlock();
      const li = el('li', `entry raw ${channel}`);
      li.append(el('span', 'who', channel), el('pre', null, text.replace(/\n$/, '')));
      this.entries.append(li);
      // The newest lines only: a long run's every output line in the page would grow it (and
      // the tab's memory) without bound. The oldest go, and a note at the top counts them.
      this.rawLines.push(li);
      if (this.rawLines.length - this.rawFirst > MAX_RAW_LINES) {
        const oldest = this.rawLines[this.rawFirst];
        // An entry is what arrived at once: a line, or several.
        this.rawDropped += oldest.textContent.split('\n').length;
        oldest.remove();
        this.rawLines[this.rawFirst] = null;
        this.rawFirst += 1;
        if (this.rawFirst > MAX_RAW_LINES) {
          this.rawLines = this.rawLines.slice(this.rawFirst);
          this.rawFirst = 0;
        }
        if (!this.rawNote) {
          this.rawNote = el('li', 'entry gap raw-dropped');
          this.entries.prepend(this.rawNote);
        }
        const n = this.rawDropped;
        this.rawNote.textContent = `${n} earlier output line${n === 1 ? '' : 's'} not shown (the newest ${MAX_RAW_LINES} entries are)`;
      }
    }

    /** Re-render the summary once per frame, however many envelopes arrive in it. */
    scheduleSummary() {
      if (this.summaryPending) return;
      if (typeof requestAnimationFrame !== 'function' || document.hidden) {
        this.renderSummary();
        return;
      }
      this.summaryPending = true;
      requestAnimationFrame(() => {
        this.summaryPending = false;
        this.renderSummary();
      });
    }

    renderSummary() {
      const s = this.summary;
      s.textContent = '';
      const status = el('span', `badge run-status ${this.status}`, this.status);
      status.id = 'run-status';
      status.dataset.status = this.status;
      const line = el('div', 'summary-line');
      line.append(status);
      if (this.facts.model) line.append(el('span', 'fact', this.facts.model));
      if (this.startedAt !== null && this.endedAt !== null && this.endedAt > this.startedAt) line.append(el('span', 'fact', formatDuration(this.endedAt - this.startedAt)));
      line.append(el('span', 'fact', `${this.counts.tools} tool call${this.counts.tools === 1 ? '' : 's'}`));
      if (this.counts.errors) line.append(el('span', 'fact warn', `${this.counts.errors} error${this.counts.errors === 1 ? '' : 's'}`));
      const u = this.usage.run || (this.usage.calls.seen ? {
        promptTokens: this.usage.calls.prompt, completionTokens: this.usage.calls.completion,
        cachedTokens: this.usage.calls.cached, costUsd: this.usage.calls.cost || undefined,
      } : null);
      if (u) {
        const usage = el('span', 'fact usage');
        usage.id = 'run-usage';
        let text = `${formatCount(u.promptTokens)} in · ${formatCount(u.completionTokens)} out`;
        if (typeof u.cachedTokens === 'number') text += ` · ${formatCount(u.cachedTokens)} cached`;
        usage.textContent = text;
        line.append(usage);
        if (typeof u.costUsd === 'number') {
          const cost = el('span', 'fact cost', `$${u.costUsd.toFixed(4)}`);
          cost.id = 'run-cost';
          line.append(cost);
        }
      }
      if (this.connection) line.append(el('span', 'fact warn', this.connection));
      s.append(line);
      const ids = el('div', 'summary-ids');
      if (this.facts.runId) ids.append(el('span', null, `run ${this.facts.runId}`));
      if (this.facts.sessionId) ids.append(el('span', null, `session ${this.facts.sessionId}`));
      s.append(ids);
      const r = this.result;
      if (r && (r.error || r.cancel_reason)) s.append(el('div', `summary-reason ${this.status}`, r.error || r.cancel_reason));
    }
  }

  global.AgentstreamTimeline = Timeline;
})(typeof window !== 'undefined' ? window : globalThis);
