// Management pages over the admin API: providers (#/providers), configs (#/configs), guardrails
// (#/guardrails) and plugins (#/plugins).

import { api, ApiError, listAll, seg } from './api.js';
import { clearProblem, readJSON, showApiError, showProblem } from './editor.js';
import { $, clear, fmtInt, fmtStamp, h, say } from './dom.js';

// KNOWN_PROVIDERS are the provider ids the gateway ships (runtime/providers); a stored provider naming another
// (an alias) adds its own option when edited.
const KNOWN_PROVIDERS = ['openai', 'anthropic', 'azure-openai', 'bedrock', 'vertex-ai', 'google', 'groq',
  'mistral-ai', 'together-ai', 'deepseek', 'fireworks-ai', 'openrouter', 'perplexity-ai', 'x-ai', 'ollama',
  'vllm', 'lm-studio'];

// Fields a provider reads back with that are not part of its body.
const PROVIDER_READ_ONLY = ['object', 'workspace_id', 'created_at', 'updated_at'];
const PROVIDER_FORM_FIELDS = ['slug', 'provider', 'name', 'api_key', 'custom_host'];

export function fillTable(table, items, row, emptyText, columns) {
  const body = clear(table.tBodies[0]);
  if (items.length === 0) {
    body.append(h('tr', { class: 'empty' }, h('td', { colspan: columns, text: emptyText })));
    return;
  }
  for (const item of items) body.append(row(item));
}

export function actionButton(text, label, onclick, cls = 'small secondary') {
  return h('button', { type: 'button', class: cls, 'aria-label': label, text, onclick });
}

export function actions(...buttons) {
  return h('td', { class: 'actions-cell' }, h('div', { class: 'row-actions' }, buttons));
}

// failed reports an error of a load or an action on the status line (auth errors have left the page already).
export function failed(what, err) {
  if (err instanceof ApiError && (err.status === 401 || err.status === 403)) return;
  say(`${what}: ${err.message}`, 'error');
}

// busy disables a form's submit button while its request runs.
export async function busy(form, fn) {
  const button = form.querySelector('button[type="submit"]');
  button.disabled = true;
  try {
    return await fn();
  } finally {
    button.disabled = false;
  }
}

// dangerButton runs a destructive action on a second press within 5 s, instead of a native confirm() dialog
// (which blocks a script-driven browser and cannot be styled). run gets rename(text, label) to change what
// the button says for its next use (a 409's "Force delete").
export function dangerButton(text, label, run) {
  const b = h('button', { type: 'button', class: 'small danger', 'aria-label': label, text });
  let base = { text, label };
  let armed = false;
  let timer = null;
  const disarm = () => {
    clearTimeout(timer);
    armed = false;
    b.textContent = base.text;
    b.setAttribute('aria-label', base.label);
    b.classList.remove('armed');
  };
  b.addEventListener('click', async () => {
    if (!armed) {
      armed = true;
      b.textContent = 'Confirm';
      b.setAttribute('aria-label', `Confirm: ${base.label}`);
      b.classList.add('armed');
      timer = setTimeout(disarm, 5000);
      return;
    }
    disarm();
    b.disabled = true;
    try {
      await run((t, l) => {
        base = { text: t, label: l };
        disarm();
      });
    } finally {
      b.disabled = false;
    }
  });
  b.addEventListener('blur', () => {
    if (armed) setTimeout(() => { if (document.activeElement !== b) disarm(); }, 200);
  });
  return b;
}

// deleteButton deletes path; a 409 (still in use, with forceable) turns the button into "Force delete", which
// sends ?force=true.
export function deleteButton(path, what, done, forceable = false) {
  let force = false;
  return dangerButton('Delete', `Delete ${what}`, async (rename) => {
    try {
      await api('DELETE', force ? `${path}?force=true` : path);
      say(`Deleted ${what}.`, 'ok');
      await done();
    } catch (err) {
      if (forceable && !force && err instanceof ApiError && err.status === 409) {
        force = true;
        rename('Force delete', `Delete ${what} even though it is in use`);
        say(`${err.message.replace(/[.\s]*$/, '.')} Press "Force delete" twice to delete it anyway.`, 'error');
        return;
      }
      failed(`Could not delete ${what}`, err);
    }
  });
}

export function summary(value, max = 80) {
  const s = JSON.stringify(value ?? null);
  return s.length > max ? `${s.slice(0, max - 1)}…` : s;
}

// Providers.

let providers = new Map();
let editingProvider = null; // the provider as read back, while its edit form is open

export const providersPage = {
  enter() {
    bindOnce('providers', () => {
      const select = $('#provider-form').elements.provider;
      for (const id of KNOWN_PROVIDERS) select.append(h('option', { value: id, text: id }));
      $('#provider-form').addEventListener('submit', submitProvider);
      $('#provider-cancel').addEventListener('click', () => resetProviderForm(true));
      $('#provider-form').addEventListener('input', (e) => clearProblem(e.target, null));
    });
    loadProviders();
  },
  leave() {
    resetProviderForm(false);
  },
};

const bound = new Set();
export function bindOnce(name, fn) {
  if (bound.has(name)) return;
  bound.add(name);
  fn();
}

async function loadProviders() {
  try {
    const list = await listAll('/v1/providers', (p) => p.slug);
    providers = new Map(list.map((p) => [p.slug, p]));
    fillTable($('#providers-table'), list, providerRow, 'No providers yet.', 7);
  } catch (err) {
    failed('Could not list the providers', err);
  }
}

function providerRow(p) {
  return h('tr', { data: { slug: p.slug } },
    h('td', { class: 'mono', text: p.slug }),
    h('td', { text: p.provider || '' }),
    h('td', { text: p.name || '' }),
    h('td', { class: 'mono', text: typeof p.api_key === 'string' ? p.api_key : '' }),
    h('td', { class: 'wrap', text: p.custom_host || '' }),
    h('td', { class: 'nowrap', text: fmtStamp(p.updated_at) }),
    actions(
      actionButton('Edit', `Edit provider ${p.slug}`, () => editProvider(p.slug)),
      deleteButton(`/v1/providers/${seg(p.slug)}`, `provider ${p.slug}`, async () => {
        if (editingProvider && editingProvider.slug === p.slug) resetProviderForm(false);
        await loadProviders();
      }, true)));
}

function resetProviderForm(focus) {
  const form = $('#provider-form');
  form.reset();
  editingProvider = null;
  form.elements.slug.readOnly = false;
  form.elements.api_key.placeholder = '';
  clearProblem([...form.elements], $('#provider-error'));
  $('#provider-form-title').textContent = 'Add a provider';
  $('#provider-submit').textContent = 'Add provider';
  $('#provider-cancel').hidden = true;
  if (focus) form.elements.slug.focus();
}

function editProvider(slug) {
  const p = providers.get(slug);
  if (!p) return;
  resetProviderForm(false);
  editingProvider = p;
  const form = $('#provider-form');
  const el = form.elements;
  el.slug.value = p.slug;
  el.slug.readOnly = true;
  if (![...el.provider.options].some((o) => o.value === p.provider)) {
    el.provider.append(h('option', { value: p.provider, text: p.provider }));
  }
  el.provider.value = p.provider;
  el.name.value = p.name || '';
  el.custom_host.value = p.custom_host || '';
  // Write-only: the input stays empty; the masked value read back is sent again only to keep the stored key.
  el.api_key.value = '';
  el.api_key.placeholder = p.api_key ? `unchanged (${p.api_key})` : 'none';
  const extra = {};
  for (const [k, v] of Object.entries(p)) {
    if (!PROVIDER_READ_ONLY.includes(k) && !PROVIDER_FORM_FIELDS.includes(k)) extra[k] = v;
  }
  el.extra.value = Object.keys(extra).length ? JSON.stringify(extra, null, 2) : '';
  $('#provider-form-title').textContent = `Edit provider ${p.slug}`;
  $('#provider-submit').textContent = 'Save changes';
  $('#provider-cancel').hidden = false;
  form.scrollIntoView({ block: 'nearest' });
  el.provider.focus();
}

async function submitProvider(event) {
  event.preventDefault();
  const form = event.currentTarget;
  const el = form.elements;
  const box = $('#provider-error');
  clearProblem([...el], box);
  const extra = readJSON(el.extra, box, { allowEmpty: true });
  if (extra === undefined) return;
  const slug = el.slug.value.trim();
  if (!slug) {
    showProblem(el.slug, box, 'slug', 'Give the provider a slug.');
    el.slug.focus();
    return;
  }
  const body = { ...extra, slug, provider: el.provider.value };
  const name = el.name.value.trim();
  if (name) body.name = name;
  const host = el.custom_host.value.trim();
  if (host) body.custom_host = host;
  const key = el.api_key.value;
  if (key) body.api_key = key;
  else if (editingProvider && typeof editingProvider.api_key === 'string') body.api_key = editingProvider.api_key;
  const editing = editingProvider;
  await busy(form, async () => {
    try {
      if (editing) await api('PUT', `/v1/providers/${seg(editing.slug)}`, { json: body });
      else await api('POST', '/v1/providers', { json: body });
      say(editing ? `Provider ${slug} saved.` : `Provider ${slug} added.`, 'ok');
      resetProviderForm(false);
      await loadProviders();
    } catch (err) {
      if (!(err instanceof ApiError) || err.status === 401 || err.status === 403) return failed('Could not save the provider', err);
      const top = (err.param || '').split(/[.[]/)[0];
      const field = PROVIDER_FORM_FIELDS.includes(top) ? el[top] : el.extra;
      showProblem(field, box, err.param, err.message);
      say(`Could not save the provider: ${err.message}`, 'error');
      field.focus();
    }
  });
}


// Configs.

let configs = new Map();
let editingConfig = '';

export const configsPage = {
  enter() {
    bindOnce('configs', () => {
      $('#config-form').addEventListener('submit', submitConfig);
      $('#config-cancel').addEventListener('click', () => resetConfigForm(true));
      $('#config-form').addEventListener('input', (e) => clearProblem(e.target, null));
    });
    loadConfigs();
  },
  leave() {
    resetConfigForm(false);
  },
};

async function loadConfigs() {
  try {
    const list = await listAll('/v1/configs', (c) => c.id);
    configs = new Map(list.map((c) => [c.id, c]));
    fillTable($('#configs-table'), list, configRow, 'No configs yet.', 4);
  } catch (err) {
    failed('Could not list the configs', err);
  }
}

function configSummary(c) {
  if (!c || typeof c !== 'object') return summary(c);
  const parts = [];
  if (c.strategy?.mode) parts.push(c.strategy.mode);
  if (Array.isArray(c.targets)) parts.push(`${c.targets.length} target${c.targets.length === 1 ? '' : 's'}`);
  if (c.provider) parts.push(`provider ${c.provider}`);
  if (c.virtual_key) parts.push(`virtual key ${c.virtual_key}`);
  return parts.length ? parts.join(' · ') : summary(c);
}

function configRow(c) {
  return h('tr', { data: { configId: c.id } },
    h('td', { class: 'mono', text: c.id }),
    h('td', { class: 'wrap', text: configSummary(c.config) }),
    h('td', { class: 'nowrap', text: fmtStamp(c.updated_at) }),
    actions(
      actionButton('Edit', `Edit config ${c.id}`, () => editConfig(c.id)),
      deleteButton(`/v1/configs/${seg(c.id)}`, `config ${c.id}`, async () => {
        if (editingConfig === c.id) resetConfigForm(false);
        await loadConfigs();
      })));
}

function resetConfigForm(focus) {
  const form = $('#config-form');
  form.reset();
  editingConfig = '';
  form.elements.id.readOnly = false;
  clearProblem([...form.elements], $('#config-error'));
  $('#config-form-title').textContent = 'Add a config';
  $('#config-cancel').hidden = true;
  if (focus) form.elements.id.focus();
}

function editConfig(id) {
  const c = configs.get(id);
  if (!c) return;
  resetConfigForm(false);
  editingConfig = id;
  const el = $('#config-form').elements;
  el.id.value = id;
  el.id.readOnly = true;
  el.config.value = JSON.stringify(c.config, null, 2);
  $('#config-form-title').textContent = `Edit config ${id}`;
  $('#config-cancel').hidden = false;
  $('#config-form').scrollIntoView({ block: 'nearest' });
  el.config.focus();
}

async function submitConfig(event) {
  event.preventDefault();
  const form = event.currentTarget;
  const el = form.elements;
  const box = $('#config-error');
  clearProblem([...el], box);
  const id = el.id.value.trim();
  if (!id) {
    showProblem(el.id, box, 'id', 'Give the config an ID.');
    el.id.focus();
    return;
  }
  const config = readJSON(el.config, box);
  if (config === undefined) {
    el.config.focus();
    return;
  }
  const editing = editingConfig;
  await busy(form, async () => {
    try {
      if (editing) await api('PUT', `/v1/configs/${seg(editing)}`, { json: { config } });
      else await api('POST', '/v1/configs', { json: { id, config } });
      say(`Config ${id} saved.`, 'ok');
      resetConfigForm(false);
      await loadConfigs();
    } catch (err) {
      if (!(err instanceof ApiError) || err.status === 401 || err.status === 403) return failed('Could not save the config', err);
      if (err.param === 'id') {
        showProblem(el.id, box, err.param, err.message);
        el.id.focus();
      } else {
        showApiError(el.config, box, err, 'config');
      }
      say(`Could not save the config: ${err.message}`, 'error');
    }
  });
}


// Guardrails.

let guardrails = new Map();

export const guardrailsPage = {
  enter() {
    bindOnce('guardrails', () => {
      $('#guardrail-form').addEventListener('submit', submitGuardrail);
      $('#guardrail-form').addEventListener('input', (e) => clearProblem(e.target, null));
    });
    loadGuardrails();
  },
  leave() {},
};

async function loadGuardrails() {
  try {
    const list = await listAll('/v1/guardrails', (g) => g.id);
    guardrails = new Map(list.map((g) => [g.id, g]));
    fillTable($('#guardrails-table'), list, guardrailRow, 'No saved guardrails yet.', 4);
  } catch (err) {
    failed('Could not list the guardrails', err);
  }
}

function checkIds(g) {
  if (!g || typeof g !== 'object') return [];
  const ids = Object.keys(g).filter((k) => k.includes('.'));
  if (Array.isArray(g.checks)) ids.push(...g.checks.map((c) => c?.id).filter(Boolean));
  return ids;
}

function guardrailRow(g) {
  const ids = checkIds(g.guardrail);
  return h('tr', { data: { guardrailId: g.id } },
    h('td', { class: 'mono', text: g.id }),
    h('td', { class: 'wrap', text: `${ids.join(', ') || '(none)'}${g.guardrail?.deny ? ' · denies' : ''}` }),
    h('td', { class: 'nowrap', text: fmtStamp(g.updated_at) }),
    actions(
      actionButton('Edit', `Edit guardrail ${g.id}`, () => editGuardrail(g.id)),
      deleteButton(`/v1/guardrails/${seg(g.id)}`, `guardrail ${g.id}`, loadGuardrails)));
}

function editGuardrail(id) {
  const g = guardrails.get(id);
  if (!g) return;
  const el = $('#guardrail-form').elements;
  clearProblem([...el], $('#guardrail-error'));
  el.id.value = id;
  el.guardrail.value = JSON.stringify(g.guardrail, null, 2);
  $('#guardrail-form').scrollIntoView({ block: 'nearest' });
  el.guardrail.focus();
}

async function submitGuardrail(event) {
  event.preventDefault();
  const form = event.currentTarget;
  const el = form.elements;
  const box = $('#guardrail-error');
  clearProblem([...el], box);
  const id = el.id.value.trim();
  if (!id) {
    showProblem(el.id, box, 'id', 'Give the guardrail an ID.');
    el.id.focus();
    return;
  }
  const body = readJSON(el.guardrail, box);
  if (body === undefined) {
    el.guardrail.focus();
    return;
  }
  await busy(form, async () => {
    try {
      await api('PUT', `/v1/guardrails/${seg(id)}`, { json: body });
      say(`Guardrail ${id} saved.`, 'ok');
      form.reset();
      await loadGuardrails();
    } catch (err) {
      if (!(err instanceof ApiError) || err.status === 401 || err.status === 403) return failed('Could not save the guardrail', err);
      showApiError(el.guardrail, box, err, '');
      say(`Could not save the guardrail: ${err.message}`, 'error');
    }
  });
}


// Plugins.

export const pluginsPage = {
  enter() {
    bindOnce('plugins', () => {
      $('#plugin-form').addEventListener('submit', submitPlugin);
      $('#plugin-form').addEventListener('input', (e) => clearProblem(e.target, null));
    });
    loadPlugins();
  },
  leave() {},
};

async function loadPlugins() {
  try {
    const list = await listAll('/v1/plugins', (p) => p.id);
    fillTable($('#plugins-table'), list, pluginRow, 'No plugins yet.', 6);
  } catch (err) {
    failed('Could not list the plugins', err);
  }
}

function pluginRow(p) {
  const status = p.load_error
    ? h('td', { class: 'wrap' }, h('span', { class: 'badge st-5xx', text: 'load error' }), ' ', h('span', { class: 'error', text: p.load_error }))
    : h('td', {}, h('span', { class: 'badge st-ok', text: p.status || 'loaded' }));
  return h('tr', { data: { pluginId: p.id } },
    h('td', { class: 'mono', text: p.id }),
    status,
    h('td', { class: 'num', text: fmtInt(p.size) }),
    h('td', { class: 'mono', title: p.sha256 || '', text: (p.sha256 || '').slice(0, 12) }),
    h('td', { class: 'nowrap', text: fmtStamp(p.updated_at) }),
    actions(deleteButton(`/v1/plugins/${seg(p.id)}`, `plugin ${p.id}`, loadPlugins)));
}

async function submitPlugin(event) {
  event.preventDefault();
  const form = event.currentTarget;
  const el = form.elements;
  const box = $('#plugin-error');
  clearProblem([...el], box);
  const id = el.id.value.trim();
  if (!id) {
    showProblem(el.id, box, 'id', 'Give the plugin an ID.');
    el.id.focus();
    return;
  }
  const file = el.file.files && el.file.files[0];
  if (!file || file.size === 0) {
    showProblem(el.file, box, 'file', 'Choose a .wasm file.');
    el.file.focus();
    return;
  }
  say(`Uploading ${file.name} as plugin ${id}; the gateway loads it before answering…`);
  await busy(form, async () => {
    try {
      const p = await api('PUT', `/v1/plugins/${seg(id)}`, { body: file, contentType: 'application/wasm' });
      say(`Plugin ${id} loaded (${fmtInt(p?.size)} bytes).`, 'ok');
      form.reset();
      await loadPlugins();
    } catch (err) {
      if (!(err instanceof ApiError) || err.status === 401 || err.status === 403) return failed('Could not upload the plugin', err);
      showProblem(err.param === 'id' ? el.id : el.file, box, err.param, err.message);
      say(`Plugin ${id} was not loaded: ${err.message}`, 'error');
    }
  });
}

