// Prompt templates (#/prompts: list, create, versions, publish, delete) and rate-limit and usage-limit policies
// (#/policies: list, create from JSON, edit, delete) over the admin API.

import { api, ApiError, seg } from './api.js';
import { clearProblem, readJSON, showApiError, showProblem } from './editor.js';
import { $, clear, fmtCost, fmtStamp, fmtTime, h, pretty, say } from './dom.js';
import { actionButton, actions, bindOnce, busy, deleteButton, failed, fillTable, summary } from './manage.js';

// Prompts.

let openPrompt = ''; // the prompt whose versions are shown

export const promptsPage = {
  enter() {
    bindOnce('prompts', () => {
      $('#prompt-form').addEventListener('submit', submitPrompt);
      $('#prompt-version-form').addEventListener('submit', submitVersion);
      for (const f of ['#prompt-form', '#prompt-version-form']) {
        $(f).addEventListener('input', (e) => clearProblem(e.target, null));
      }
    });
    loadPrompts();
  },
  leave() {
    openPrompt = '';
    $('#prompt-detail').hidden = true;
  },
};

async function loadPrompts() {
  try {
    const page = await api('GET', '/v1/prompts');
    const list = Array.isArray(page?.data) ? page.data : [];
    fillTable($('#prompts-table'), list, promptRow, 'No prompts yet.', 6);
    if (openPrompt && !list.some((p) => p.id === openPrompt)) closePrompt();
  } catch (err) {
    failed('Could not list the prompts', err);
  }
}

function promptRow(p) {
  return h('tr', { data: { promptId: p.id } },
    h('td', { class: 'mono', text: p.id }),
    h('td', { text: p.name || '' }),
    h('td', { class: 'num', text: p.published_version ?? '–' }),
    h('td', { class: 'num', text: p.latest_version ?? '' }),
    h('td', { class: 'nowrap', text: fmtStamp(p.updated_at) }),
    actions(
      actionButton('Versions', `Show the versions of prompt ${p.id}`, () => showPrompt(p.id, true)),
      deleteButton(`/v1/prompts/${seg(p.id)}`, `prompt ${p.id}`, loadPrompts)));
}

function closePrompt() {
  openPrompt = '';
  $('#prompt-detail').hidden = true;
}

async function showPrompt(id, focus) {
  try {
    const p = await api('GET', `/v1/prompts/${seg(id)}`);
    openPrompt = id;
    const detail = $('#prompt-detail');
    detail.hidden = false;
    $('#prompt-detail-title').textContent = `Prompt ${id}${p.name ? ` (${p.name})` : ''}`;
    const ol = clear($('#prompt-versions'));
    const versions = Array.isArray(p.versions) ? p.versions : [];
    for (const v of versions) {
      ol.append(h('li', { data: { version: v.version } },
        h('div', { class: 'version-head' },
          h('strong', { text: `Version ${v.version}` }),
          v.published ? h('span', { class: 'badge st-ok', text: 'published' }) : null,
          v.published ? null : actionButton('Publish', `Publish version ${v.version} of prompt ${id}`, () => publish(id, v.version))),
        h('pre', { class: 'small', tabindex: 0, text: pretty(v.template) })));
    }
    const latest = versions[versions.length - 1];
    const el = $('#prompt-version-form').elements;
    el.template.value = latest ? JSON.stringify(latest.template, null, 2) : '';
    el.publish.checked = false;
    clearProblem([...el], $('#prompt-version-error'));
    if (focus) $('#prompt-detail-title').focus();
  } catch (err) {
    failed(`Could not read prompt ${id}`, err);
  }
}

async function publish(id, version) {
  try {
    await api('POST', `/v1/prompts/${seg(id)}/versions/${seg(String(version))}/publish`, { json: {} });
    say(`Version ${version} of prompt ${id} published.`, 'ok');
    await Promise.all([loadPrompts(), showPrompt(id, false)]);
  } catch (err) {
    failed(`Could not publish version ${version}`, err);
  }
}

async function submitPrompt(event) {
  event.preventDefault();
  const form = event.currentTarget;
  const el = form.elements;
  const box = $('#prompt-error');
  clearProblem([...el], box);
  const id = el.id.value.trim();
  if (!id) {
    showProblem(el.id, box, 'id', 'Give the prompt an ID.');
    el.id.focus();
    return;
  }
  const template = readJSON(el.template, box);
  if (template === undefined) {
    el.template.focus();
    return;
  }
  const body = { id, template };
  if (el.name.value.trim()) body.name = el.name.value.trim();
  await busy(form, async () => {
    try {
      await api('POST', '/v1/prompts', { json: body });
      say(`Prompt ${id} added; version 1 is published.`, 'ok');
      form.reset();
      await loadPrompts();
    } catch (err) {
      if (!(err instanceof ApiError) || err.status === 401 || err.status === 403) return failed('Could not add the prompt', err);
      if (err.param === 'id' || err.param === 'name') {
        showProblem(el[err.param], box, err.param, err.message);
      } else {
        showApiError(el.template, box, err, 'template');
      }
      say(`Could not add the prompt: ${err.message}`, 'error');
    }
  });
}

async function submitVersion(event) {
  event.preventDefault();
  const form = event.currentTarget;
  const el = form.elements;
  const box = $('#prompt-version-error');
  const id = openPrompt;
  if (!id) return;
  const template = readJSON(el.template, box);
  if (template === undefined) {
    el.template.focus();
    return;
  }
  await busy(form, async () => {
    try {
      const p = await api('POST', `/v1/prompts/${seg(id)}/versions`, { json: { template, publish: el.publish.checked } });
      say(`Version ${p?.latest_version ?? ''} of prompt ${id} added${el.publish.checked ? ' and published' : ''}.`, 'ok');
      await Promise.all([loadPrompts(), showPrompt(id, false)]);
    } catch (err) {
      if (!(err instanceof ApiError) || err.status === 401 || err.status === 403) return failed('Could not add the version', err);
      showApiError(el.template, box, err, 'template');
      say(`Could not add the version: ${err.message}`, 'error');
    }
  });
}

// Policies.

const KINDS = {
  rate: { path: '/v1/policies/rate-limits', table: '#rate-limits-table', form: '#rate-limit-form', error: '#rate-limit-error', noun: 'rate-limit policy', columns: 7 },
  usage: { path: '/v1/policies/usage-limits', table: '#usage-limits-table', form: '#usage-limit-form', error: '#usage-limit-error', noun: 'usage-limit policy', columns: 8 },
};

export const policiesPage = {
  enter() {
    bindOnce('policies', () => {
      for (const kind of Object.values(KINDS)) {
        $(kind.form).addEventListener('submit', (e) => submitPolicy(e, kind));
        $(kind.form).addEventListener('input', (e) => clearProblem(e.target, null));
      }
    });
    loadPolicies(KINDS.rate);
    loadPolicies(KINDS.usage);
  },
  leave() {},
};

function conditionsText(p) {
  const parts = [];
  if (Array.isArray(p.conditions) && p.conditions.length) {
    parts.push(p.conditions.map((c) => `${c.key}=${c.value}`).join(', '));
  }
  if (Array.isArray(p.group_by) && p.group_by.length) {
    parts.push(`per ${p.group_by.map((g) => g.key).join(', ')}`);
  }
  return parts.join(' · ') || 'every request';
}

// editPolicy puts a policy's JSON in its kind's form, which then changes it (PUT) instead of adding one. The
// fields the gateway sets are left in: the API ignores them, so a policy read back can be sent back changed.
function editPolicy(kind, p) {
  const form = $(kind.form);
  form.dataset.editing = p.id;
  form.elements.policy.value = pretty(p);
  form.querySelector('h3').textContent = `Edit ${kind.noun} ${p.name || p.id}`;
  form.querySelector('button[type="submit"]').textContent = `Save ${kind.noun}`;
  form.elements.policy.focus();
}

// stopEditing returns a kind's form to adding policies.
function stopEditing(kind) {
  const form = $(kind.form);
  delete form.dataset.editing;
  form.reset();
  form.querySelector('h3').textContent = `Add a ${kind.noun}`;
  form.querySelector('button[type="submit"]').textContent = `Add ${kind.noun}`;
}

function policyRow(kind, p) {
  const del = deleteButton(`${kind.path}/${seg(p.id)}`, `${kind.noun} ${p.name || p.id}`, () => loadPolicies(kind));
  const edit = actionButton('Edit', `Edit ${kind.noun} ${p.name || p.id}`, () => editPolicy(kind, p));
  if (kind === KINDS.rate) {
    return h('tr', { data: { policyId: p.id } },
      h('td', { class: 'mono', title: p.id, text: p.id }),
      h('td', { text: p.name || '' }),
      h('td', { text: p.type || '' }),
      h('td', { class: 'nowrap', text: `${p.value ?? ''} ${p.unit || ''}` }),
      h('td', { class: 'wrap', text: conditionsText(p) }),
      h('td', { text: p.status || '' }),
      actions(edit, del));
  }
  const used = p.type === 'cost' ? fmtCost(Number(p.current_usage) || 0) : String(p.current_usage ?? 0);
  const reset = p.periodic_reset ? `${p.periodic_reset}${p.period_end ? ` (next ${fmtTime(p.period_end)})` : ''}` : 'never';
  return h('tr', { data: { policyId: p.id } },
    h('td', { class: 'mono', title: p.id, text: p.id }),
    h('td', { text: p.name || '' }),
    h('td', { text: p.type || '' }),
    h('td', { class: 'nowrap', text: `${p.credit_limit ?? ''}${p.type === 'cost' ? ' USD' : ''}` }),
    h('td', { class: 'nowrap', text: used }),
    h('td', { text: reset }),
    h('td', { text: p.status || '' }),
    actions(edit, del));
}

async function loadPolicies(kind) {
  try {
    const page = await api('GET', kind.path);
    const list = Array.isArray(page?.data) ? page.data : [];
    fillTable($(kind.table), list, (p) => policyRow(kind, p), `No ${kind.noun.replace('policy', 'policies')} yet.`, kind.columns);
  } catch (err) {
    failed(`Could not list the ${kind.noun.replace('policy', 'policies')}`, err);
  }
}

async function submitPolicy(event, kind) {
  event.preventDefault();
  const form = event.currentTarget;
  const el = form.elements;
  const box = $(kind.error);
  const body = readJSON(el.policy, box);
  if (body === undefined) {
    el.policy.focus();
    return;
  }
  await busy(form, async () => {
    const editing = form.dataset.editing;
    const verb = editing ? 'save' : 'add';
    try {
      const p = editing
        ? await api('PUT', `${kind.path}/${seg(editing)}`, { json: body })
        : await api('POST', kind.path, { json: body });
      say(`${editing ? 'Saved' : 'Added'} ${kind.noun} ${p?.name || p?.id || summary(body, 40)}.`, 'ok');
      stopEditing(kind);
      await loadPolicies(kind);
    } catch (err) {
      if (!(err instanceof ApiError) || err.status === 401 || err.status === 403) return failed(`Could not ${verb} the ${kind.noun}`, err);
      showApiError(el.policy, box, err, '');
      say(`Could not ${verb} the ${kind.noun}: ${err.message}`, 'error');
    }
  });
}
