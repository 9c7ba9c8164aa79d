// The admin API client: every call goes to this page's own origin ("/v1/..."), with the admin key from session
// storage as x-gateway-api-key. The key never goes into a URL, local storage or a cookie.

const KEY = 'gateway-console-key';

export function getKey() {
  return sessionStorage.getItem(KEY) || '';
}

export function setKey(key) {
  sessionStorage.setItem(KEY, key);
}

export function clearKey() {
  sessionStorage.removeItem(KEY);
}

// ApiError is a failed call: the HTTP status and the gateway's error object (message, code, param).
export class ApiError extends Error {
  constructor(status, message, code = '', param = '') {
    super(message);
    this.name = 'ApiError';
    this.status = status;
    this.code = code || '';
    this.param = param || '';
  }
}

let onAuthError = () => {};

// setAuthErrorHandler names what a 401 or 403 does (app.js: back to sign-in with the message).
export function setAuthErrorHandler(fn) {
  onAuthError = fn;
}

// api calls the admin API. opts.json is sent as a JSON body; opts.body (with opts.contentType) as it is. It
// answers the parsed JSON body (null when empty) or throws an ApiError.
export async function api(method, path, opts = {}) {
  if (!path.startsWith('/v1/')) throw new Error(`not an admin API path: ${path}`);
  const headers = { 'x-gateway-api-key': getKey() };
  let body;
  if (opts.json !== undefined) {
    headers['content-type'] = 'application/json';
    body = JSON.stringify(opts.json);
  } else if (opts.body !== undefined) {
    headers['content-type'] = opts.contentType || 'application/octet-stream';
    body = opts.body;
  }
  let resp;
  try {
    resp = await fetch(path, {
      method, headers, body, signal: opts.signal,
      credentials: 'same-origin', cache: 'no-store', redirect: 'error', referrerPolicy: 'no-referrer',
    });
  } catch (err) {
    if (err.name === 'AbortError') throw err;
    throw new ApiError(0, `the gateway did not answer (${err.message})`);
  }
  const text = await resp.text();
  let data = null;
  if (text) {
    try {
      data = JSON.parse(text);
    } catch {
      data = null;
    }
  }
  if (!resp.ok) {
    const e = data && typeof data.error === 'object' && data.error ? data.error : {};
    const message = e.message || (typeof data?.error === 'string' ? data.error : '') || `${resp.status} ${resp.statusText}`;
    const err = new ApiError(resp.status, message, e.code, e.param);
    if (resp.status === 401 || resp.status === 403) onAuthError(err);
    throw err;
  }
  return data;
}

// listAll reads every page of a list paged by limit and after (providers, configs, guardrails, plugins), up to
// maxPages pages of 100.
export async function listAll(path, idOf, maxPages = 20) {
  const out = [];
  let after = '';
  for (let i = 0; i < maxPages; i++) {
    const q = new URLSearchParams({ limit: '100' });
    if (after) q.set('after', after);
    const page = await api('GET', `${path}?${q}`);
    const data = Array.isArray(page?.data) ? page.data : [];
    out.push(...data);
    if (!page?.has_more || data.length === 0) break;
    after = idOf(data[data.length - 1]);
  }
  return out;
}

// seg escapes one path segment (an ID typed by the user).
export function seg(s) {
  return encodeURIComponent(s);
}
