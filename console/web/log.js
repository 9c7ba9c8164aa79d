// The live log (#/log) and a request's story (#/log/<id>): GET /v1/logs polled every 2 s with the filters as
// query parameters, new entries (by id) added on top; GET /v1/logs/{id} for the story.

import { api, ApiError, seg } from './api.js';
import { $, clear, fmtClock, fmtCost, fmtInt, fmtMs, fmtTime, h, pretty, say } from './dom.js';

const POLL_MS = 2000;
const PAGE = 50;
const MAX_ROWS = 500; // older rows fall off the bottom
const COLUMNS = 10;

let bound = false;
let active = false;
let paused = false;
let timer = null;
let inflight = null;
let generation = 0; // bumped when the filters change, so an older poll's answer is dropped
let filters = new URLSearchParams();
const seen = new Set();

let storyId = '';
let storyCtl = null;

export const logPage = {
  enter(arg) {
    bind();
    if (!active) {
      active = true;
      restart();
    }
    if (arg) openStory(arg);
    else closeStory();
  },
  leave() {
    active = false;
    stopPolling();
    closeStory();
  },
};

function bind() {
  if (bound) return;
  bound = true;
  $('#log-filters').addEventListener('submit', applyFilters);
  $('#log-filters').addEventListener('reset', () => {
    filters = new URLSearchParams();
    restart();
  });
  $('#log-pause').addEventListener('click', togglePause);
  const body = $('#log-table tbody');
  body.addEventListener('click', (e) => {
    const row = e.target.closest('tr[data-log-id]');
    if (row) select(row);
  });
  body.addEventListener('keydown', (e) => {
    const row = e.target.closest('tr[data-log-id]');
    if (!row) return;
    if (e.key === 'Enter' || e.key === ' ') {
      e.preventDefault();
      select(row);
    } else if (e.key === 'ArrowDown' || e.key === 'ArrowUp') {
      e.preventDefault();
      const next = e.key === 'ArrowDown' ? row.nextElementSibling : row.previousElementSibling;
      if (next && next.dataset.logId) next.focus();
    }
  });
  $('#story').addEventListener('keydown', (e) => {
    if (e.key === 'Escape') location.hash = '#/log';
  });
}

function select(row) {
  const target = `#/log/${seg(row.dataset.logId)}`;
  if (location.hash === target) openStory(row.dataset.logId);
  else location.hash = target;
}

function stopPolling() {
  clearTimeout(timer);
  timer = null;
  if (inflight) inflight.abort();
  inflight = null;
}

function restart() {
  generation++;
  stopPolling();
  seen.clear();
  const body = clear($('#log-table tbody'));
  body.append(emptyRow('Loading…'));
  poll();
}

function schedule() {
  clearTimeout(timer);
  timer = setTimeout(poll, POLL_MS);
}

async function poll() {
  timer = null;
  if (!active || paused) return;
  if (document.hidden) { // nobody is looking: ask again later
    schedule();
    return;
  }
  const gen = generation;
  const ctl = new AbortController();
  inflight = ctl;
  try {
    const q = new URLSearchParams(filters);
    q.set('limit', String(PAGE));
    const page = await api('GET', `/v1/logs?${q}`, { signal: ctl.signal });
    if (gen !== generation || !active) return;
    addEntries(Array.isArray(page?.data) ? page.data : []);
    $('#log-state').textContent = `Updated ${new Date().toLocaleTimeString()} · ${seen.size} shown${filters.toString() ? ' (filtered)' : ''}.`;
  } catch (err) {
    if (err.name === 'AbortError' || gen !== generation || !active) return;
    $('#log-state').textContent = `Could not read the log: ${err.message}`;
    if (err instanceof ApiError && err.status === 400) {
      say(`Filter refused${err.param ? ` (${err.param})` : ''}: ${err.message}`, 'error');
      paused = true; // the same query would fail every 2 s
      syncPause();
    }
  } finally {
    if (inflight === ctl) inflight = null;
    if (active && !paused && gen === generation && timer === null) schedule();
  }
}

function emptyRow(text) {
  return h('tr', { class: 'empty' }, h('td', { colspan: COLUMNS, text }));
}

function addEntries(entries) {
  const body = $('#log-table tbody');
  const fresh = entries.filter((e) => e && typeof e.id === 'string' && !seen.has(e.id));
  if (fresh.length > 0) {
    for (const row of body.querySelectorAll('tr.empty')) row.remove();
    const frag = document.createDocumentFragment();
    for (const e of fresh) {
      seen.add(e.id);
      frag.append(logRow(e));
    }
    body.prepend(frag);
    while (body.rows.length > MAX_ROWS) {
      const last = body.rows[body.rows.length - 1];
      seen.delete(last.dataset.logId);
      last.remove();
    }
    markSelected();
  }
  if (body.rows.length === 0 || (body.rows.length === 1 && body.rows[0].classList.contains('empty'))) {
    clear(body).append(emptyRow(filters.toString() ? 'No request matches the filters.' : 'No requests yet.'));
  }
}

function statusClass(status) {
  if (status >= 500) return 'st-5xx';
  if (status >= 400) return 'st-4xx';
  if (status >= 200 && status < 300) return status === 200 ? 'st-ok' : 'st-warn';
  return '';
}

function latencySplit(e) {
  const total = Number(e.latency_ms) || 0;
  const upstream = Number(e.upstream_latency_ms) || 0;
  return { total, upstream, gateway: Math.max(0, total - upstream) };
}

function logRow(e) {
  const lat = latencySplit(e);
  const usage = e.usage || null;
  const cache = e.cache_status || '';
  return h('tr', {
    tabindex: 0, data: { logId: e.id },
    'aria-label': `${e.status} ${e.provider || ''} ${e.model || ''} at ${fmtTime(e.created_at)}: open the story`,
  },
  h('td', { class: 'nowrap', title: fmtTime(e.created_at), text: fmtClock(e.created_at) }),
  h('td', {}, h('span', { class: `badge ${statusClass(e.status)}`, text: e.status })),
  h('td', { text: e.provider || '' }),
  h('td', { class: 'wrap', text: e.model || '' }),
  h('td', { class: 'num', text: fmtMs(lat.gateway) }),
  h('td', { class: 'num', text: fmtMs(lat.upstream) }),
  h('td', { class: 'num', text: usage ? fmtInt(usage.input_tokens) : '' }),
  h('td', { class: 'num', text: usage ? fmtInt(usage.output_tokens) : '' }),
  h('td', { class: 'num', text: fmtCost(e.cost_usd) }),
  h('td', { text: cache }));
}

function markSelected() {
  for (const row of $('#log-table tbody').rows) {
    if (row.dataset.logId === storyId) row.setAttribute('aria-current', 'true');
    else row.removeAttribute('aria-current');
  }
}

function applyFilters(event) {
  event.preventDefault();
  const form = event.currentTarget;
  const next = new URLSearchParams();
  const status = form.elements.status.value.trim();
  if (status) {
    const n = Number(status);
    if (!Number.isInteger(n) || n < 100 || n > 599) {
      say('Status must be an HTTP status from 100 to 599.', 'error');
      form.elements.status.focus();
      return;
    }
    next.set('status', String(n));
  }
  for (const name of ['provider', 'model', 'trace_id']) {
    const v = form.elements[name].value.trim();
    if (v) next.set(name, v);
  }
  const meta = form.elements.metadata.value.trim();
  if (meta) {
    for (const pair of meta.split(',')) {
      const at = pair.indexOf('=');
      const key = at < 0 ? '' : pair.slice(0, at).trim();
      if (!key) {
        say(`Metadata filters are key=value pairs, separated by commas: "${pair.trim()}" is not one.`, 'error');
        form.elements.metadata.focus();
        return;
      }
      next.set(`metadata.${key}`, pair.slice(at + 1).trim());
    }
  }
  filters = next;
  say(next.toString() ? 'Filters applied.' : 'Filters cleared.');
  if (paused) {
    paused = false;
    syncPause();
  }
  restart();
}

function togglePause() {
  paused = !paused;
  syncPause();
  if (paused) {
    stopPolling();
    $('#log-state').textContent = 'Paused.';
  } else {
    poll();
  }
}

function syncPause() {
  const b = $('#log-pause');
  b.setAttribute('aria-pressed', String(paused));
  b.textContent = paused ? 'Resume' : 'Pause';
}

// The story of one request.

function closeStory() {
  if (storyCtl) storyCtl.abort();
  storyCtl = null;
  const had = storyId;
  storyId = '';
  $('#story').hidden = true;
  markSelected();
  if (had && active) {
    const row = $('#log-table tbody').querySelector(`tr[data-log-id="${CSS.escape(had)}"]`);
    if (row) row.focus();
  }
}

async function openStory(id) {
  if (id === storyId && !$('#story').hidden) return;
  if (storyCtl) storyCtl.abort();
  storyId = id;
  markSelected();
  const panel = $('#story');
  panel.hidden = false;
  $('#story-title').textContent = `Request ${id}`;
  clear($('#story-fields'));
  clear($('#story-latency'));
  clear($('#story-route'));
  $('#story-route-none').hidden = true;
  clear($('#story-hooks')).append(h('p', { class: 'muted', text: 'Loading…' }));
  clear($('#story-bodies'));
  const ctl = new AbortController();
  storyCtl = ctl;
  try {
    const e = await api('GET', `/v1/logs/${seg(id)}`, { signal: ctl.signal });
    if (storyId !== id) return;
    renderStory(e || {});
    $('#story-title').focus({ preventScroll: false });
  } catch (err) {
    if (err.name === 'AbortError' || storyId !== id) return;
    clear($('#story-hooks'));
    $('#story-fields').append(h('dt', { text: 'Error' }), h('dd', { class: 'error', text: err.message }));
  } finally {
    if (storyCtl === ctl) storyCtl = null;
  }
}

function field(dl, name, value, cls) {
  if (value === null || value === undefined || value === '') return;
  dl.append(h('dt', { text: name }), h('dd', { class: cls || null, text: value }));
}

function renderStory(e) {
  const dl = $('#story-fields');
  field(dl, 'ID', e.id, 'mono');
  field(dl, 'Trace ID', e.trace_id, 'mono');
  field(dl, 'Time', fmtTime(e.created_at));
  field(dl, 'Endpoint', e.endpoint);
  field(dl, 'Workspace', e.workspace_id, 'mono');
  field(dl, 'Status', e.status);
  field(dl, 'Provider', e.provider);
  field(dl, 'Model', e.model);
  field(dl, 'Answering target', e.target, 'mono');
  field(dl, 'Retries', e.retries);
  field(dl, 'Cache', e.cache_status);
  if (e.usage) {
    field(dl, 'Tokens in / out', `${fmtInt(e.usage.input_tokens)} / ${fmtInt(e.usage.output_tokens)}${e.usage.estimated ? ' (estimated)' : ''}`);
  }
  field(dl, 'Cost USD', fmtCost(e.cost_usd));
  if (e.metadata && typeof e.metadata === 'object') {
    const pairs = Object.entries(e.metadata);
    if (pairs.length > 0) {
      dl.append(h('dt', { text: 'Metadata' }),
        h('dd', {}, h('ul', { class: 'plain' }, pairs.map(([k, v]) => h('li', { class: 'mono', text: `${k}=${v}` })))));
    }
  }
  renderLatency(e);
  renderRoute(Array.isArray(e.route) ? e.route : []);
  // Older entries kept hook results only in the stored answer.
  renderHooks(e.hook_results ?? (e.response && typeof e.response === 'object' ? e.response.hook_results : null));
  renderBodies(e);
}

function renderLatency(e) {
  const lat = latencySplit(e);
  const box = $('#story-latency');
  const bar = h('div', { class: 'bar', 'aria-hidden': 'true' },
    h('span', { class: 'bar-gateway' }), h('span', { class: 'bar-upstream' }));
  if (lat.total > 0) {
    // CSSOM, not a style attribute: the page's CSP allows no inline styles.
    bar.children[0].style.width = `${(100 * lat.gateway) / lat.total}%`;
    bar.children[1].style.width = `${(100 * Math.min(lat.upstream, lat.total)) / lat.total}%`;
  }
  box.append(bar, h('p', {},
    h('span', { class: 'key key-gateway' }), `Gateway ${fmtMs(lat.gateway)} ms · `,
    h('span', { class: 'key key-upstream' }), `Upstream ${fmtMs(lat.upstream)} ms · `,
    `Total ${fmtMs(lat.total)} ms`));
}

function renderRoute(steps) {
  const ol = $('#story-route');
  $('#story-route-none').hidden = steps.length > 0;
  for (const s of steps) {
    const outcome = s.outcome || '';
    ol.append(h('li', { class: `step outcome-${outcome.replace(/[^a-z_]/g, '')}` },
      h('span', { class: 'mono', text: s.path || '(request)' }),
      ' ',
      h('span', { class: 'badge', text: outcome || '?' }),
      h('span', { class: 'muted', text: ` ${s.provider || ''} · attempt ${s.attempt ?? 0}${s.status ? ` · ${s.status}` : ''} · ${fmtMs(Number(s.latency_ms) || 0)} ms` }),
      s.error ? h('div', { class: 'error', text: s.error }) : null));
  }
}

const STAGES = [
  ['before_request_hooks', 'Before the request (input)'],
  ['after_request_hooks', 'After the answer (output)'],
];

function verdictText(v) {
  return v === true ? 'pass' : v === false ? 'fail' : String(v ?? '');
}

function renderHooks(results) {
  const box = clear($('#story-hooks'));
  let any = false;
  for (const [stage, title] of STAGES) {
    const hooks = results && Array.isArray(results[stage]) ? results[stage] : [];
    if (hooks.length === 0) continue;
    any = true;
    box.append(h('h4', { text: title }));
    const ul = h('ul', { class: 'hooks' });
    for (const hk of hooks) {
      const checks = Array.isArray(hk.checks) ? hk.checks : [];
      ul.append(h('li', { class: hk.verdict === false ? 'fail' : 'pass' },
        h('span', { class: 'mono', text: hk.id || '(hook)' }),
        ' ',
        h('span', { class: `badge ${hk.verdict === false ? 'st-4xx' : 'st-ok'}`, text: verdictText(hk.verdict) }),
        h('span', { class: 'muted', text: ` ${hk.type || ''}${hk.deny ? ' · denies' : ''}${hk.async ? ' · async' : ''} · ${fmtMs(Number(hk.execution_time) || 0)} ms` }),
        checks.length ? h('ul', { class: 'checks' }, checks.map(checkItem)) : null));
    }
    box.append(ul);
  }
  if (!any) box.append(h('p', { class: 'muted', text: 'No hooks or guardrails ran.' }));
  if (results && results.truncated === true) {
    box.append(h('p', { class: 'muted', text: 'Only part of the results was stored (too many hooks or checks, or long texts).' }));
  }
}

function checkItem(c) {
  return h('li', { class: c.verdict === false ? 'fail' : 'pass' },
    h('span', { class: 'mono', text: c.id || '(check)' }),
    ' ',
    h('span', { class: `badge ${c.verdict === false ? 'st-4xx' : 'st-ok'}`, text: verdictText(c.verdict) }),
    h('span', { class: 'muted', text: ` ${fmtMs(Number(c.execution_time) || 0)} ms${c.transformed ? ' · transformed' : ''}` }),
    c.error ? h('div', { class: 'error', text: typeof c.error === 'string' ? c.error : pretty(c.error) }) : null,
    c.data !== null && c.data !== undefined ? h('pre', { class: 'small', text: pretty(c.data) }) : null);
}

function renderBodies(e) {
  const box = $('#story-bodies');
  const parts = [['request', 'Request body', e.request_truncated], ['response', 'Response body', e.response_truncated]];
  let any = false;
  for (const [name, title, cut] of parts) {
    if (e[name] === undefined || e[name] === null) continue;
    any = true;
    box.append(h('h3', { text: cut ? `${title} (cut at the log's limit)` : title }),
      h('pre', { class: 'body', tabindex: 0, text: pretty(e[name]) }));
  }
  if (!any) {
    box.append(h('h3', { text: 'Bodies' }),
      h('p', { class: 'muted', text: 'Not stored: the gateway keeps bodies only with --log-bodies.' }));
  }
}
