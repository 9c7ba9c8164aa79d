// JSON text areas: reading them, and showing the gateway's 400 at the path its `param` names ("at
// config.targets[1].provider"), with the textarea marked invalid and that path's line selected.

import { h } from './dom.js';

// readJSON parses a textarea as a JSON object; on a syntax error it shows it and answers undefined.
export function readJSON(textarea, box, { allowEmpty = false } = {}) {
  clearProblem(textarea, box);
  const text = textarea.value.trim();
  if (!text) {
    if (allowEmpty) return {};
    showProblem(textarea, box, '', 'Write a JSON object.');
    return undefined;
  }
  let value;
  try {
    value = JSON.parse(text);
  } catch (err) {
    showProblem(textarea, box, '', `Not valid JSON: ${err.message}`);
    return undefined;
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    showProblem(textarea, box, '', 'Write a JSON object ({...}).');
    return undefined;
  }
  return value;
}

export function clearProblem(field, box) {
  if (box) box.replaceChildren();
  for (const el of [field].flat()) {
    if (!el) continue;
    el.removeAttribute('aria-invalid');
    el.classList.remove('invalid');
  }
}

// showProblem writes "at <path>: message" in box and marks field invalid.
export function showProblem(field, box, path, message) {
  box.replaceChildren();
  if (path) box.append(h('strong', { text: `at ${path}` }), ': ');
  box.append(message);
  if (field) {
    field.setAttribute('aria-invalid', 'true');
    field.classList.add('invalid');
  }
}

// showApiError shows an API error for a JSON textarea whose document sits at root in the request body
// ("config" for POST /v1/configs, "" when the textarea is the whole body). The param's path inside the
// document is selected when the textarea holds valid JSON and the path (or its nearest parent) is found.
export function showApiError(textarea, box, err, root = '') {
  const param = err.param || '';
  showProblem(textarea, box, param, err.message);
  let inner = param;
  if (root) {
    if (param === root) inner = '';
    else if (param.startsWith(`${root}.`) || param.startsWith(`${root}[`)) inner = param.slice(root.length).replace(/^\./, '');
    else return; // a field outside the textarea's document
  }
  if (inner) selectPath(textarea, inner);
}

// tokens splits a path such as targets[1].provider or input_guardrails[0].piii.detect into keys and indexes.
function tokens(path) {
  const out = [];
  for (const part of path.match(/[^.[\]]+|\[\d+\]/g) || []) {
    if (part.startsWith('[')) out.push(Number(part.slice(1, -1)));
    else out.push(part);
  }
  return out;
}

// resolve walks tokens through value, joining dotted keys when a check id holds dots ("default.wordCount").
// It answers the steps (keys and indexes) of the deepest node found.
function resolve(value, toks) {
  const steps = [];
  let node = value;
  let i = 0;
  while (i < toks.length && node !== null && typeof node === 'object') {
    const t = toks[i];
    if (typeof t === 'number') {
      if (!Array.isArray(node) || t >= node.length) break;
      steps.push(t);
      node = node[t];
      i++;
      continue;
    }
    let matched = false;
    for (let j = toks.length; j > i; j--) {
      const slice = toks.slice(i, j);
      if (slice.some((x) => typeof x === 'number')) continue;
      const key = slice.join('.');
      if (!Array.isArray(node) && Object.prototype.hasOwnProperty.call(node, key)) {
        steps.push(key);
        node = node[key];
        i = j;
        matched = true;
        break;
      }
    }
    if (!matched) break;
  }
  return steps;
}

const MARK = '\u0000console-mark\u0000';

function selectPath(textarea, path) {
  let value;
  try {
    value = JSON.parse(textarea.value);
  } catch {
    return;
  }
  const steps = resolve(value, tokens(path));
  if (steps.length === 0) return;
  // Put a marker at the path in a copy, print both alike: the marker's line is the path's line.
  const copy = JSON.parse(JSON.stringify(value));
  let parent = copy;
  for (const s of steps.slice(0, -1)) parent = parent[s];
  parent[steps[steps.length - 1]] = MARK;
  const marked = JSON.stringify(copy, null, 2).split('\n');
  const line = marked.findIndex((l) => l.includes(JSON.stringify(MARK).slice(1, -1)));
  if (line < 0) return;
  const text = JSON.stringify(value, null, 2);
  textarea.value = text;
  const lines = text.split('\n');
  let start = 0;
  for (let k = 0; k < line; k++) start += lines[k].length + 1;
  const end = start + lines[line].length;
  textarea.focus();
  textarea.setSelectionRange(start + lines[line].search(/\S/), end);
  const lh = parseFloat(getComputedStyle(textarea).lineHeight) || 18;
  textarea.scrollTop = Math.max(0, (line - 2) * lh);
}
