// The console's entry point: sign-in, sign-out and the hash router (#/log, #/log/<id>, #/overview, #/providers,
// ...). Each page module exports {enter(arg), leave()}; enter is called again when only the argument changes.

import { api, ApiError, clearKey, getKey, setAuthErrorHandler, setKey } from './api.js';
import { $, say } from './dom.js';
import { logPage } from './log.js';
import { overviewPage } from './charts.js';
import { configsPage, guardrailsPage, pluginsPage, providersPage } from './manage.js';
import { policiesPage, promptsPage } from './prompts.js';

const pages = {
  log: logPage,
  overview: overviewPage,
  providers: providersPage,
  configs: configsPage,
  guardrails: guardrailsPage,
  plugins: pluginsPage,
  prompts: promptsPage,
  policies: policiesPage,
};

let current = null; // the name of the page shown

function parseHash() {
  const raw = location.hash.replace(/^#\/?/, '');
  const slash = raw.indexOf('/');
  const name = slash < 0 ? raw : raw.slice(0, slash);
  let arg = '';
  if (slash >= 0) {
    try {
      arg = decodeURIComponent(raw.slice(slash + 1));
    } catch {
      arg = '';
    }
  }
  return { name, arg };
}

function show(name) {
  for (const section of document.querySelectorAll('main > .page')) {
    section.hidden = section.id !== `page-${name}`;
  }
  for (const a of document.querySelectorAll('a[data-nav]')) {
    if (a.dataset.nav === name) a.setAttribute('aria-current', 'page');
    else a.removeAttribute('aria-current');
  }
  const signedIn = name !== 'signin';
  $('#nav').hidden = !signedIn;
  $('#signout').hidden = !signedIn;
}

function leaveCurrent() {
  if (current && pages[current]) pages[current].leave();
  current = null;
}

function route() {
  const { name, arg } = parseHash();
  if (!getKey()) {
    leaveCurrent();
    showSignin();
    return;
  }
  if (!pages[name]) {
    location.replace('#/log');
    return;
  }
  if (current !== name) {
    const first = current !== null;
    leaveCurrent();
    show(name);
    current = name;
    const title = $(`#page-${name} h1`);
    document.title = `${title ? title.textContent : name} · Gateway console`;
    if (first) {
      say(''); // a message belongs to the page it was said on
      $('#main').focus({ preventScroll: true });
    }
  }
  pages[name].enter(arg);
}

function showSignin(message = '') {
  current = null;
  show('signin');
  document.title = 'Sign in · Gateway console';
  $('#signin-error').textContent = message;
  $('#signin-key').value = '';
  $('#signin-key').focus();
}

function signOut(message = '') {
  leaveCurrent();
  clearKey();
  if (location.hash !== '#/signin') history.replaceState(null, '', '#/signin');
  showSignin(message);
}

async function signIn(event) {
  event.preventDefault();
  const key = $('#signin-key').value.trim();
  const button = $('#signin-submit');
  if (!key) {
    $('#signin-error').textContent = 'Give an admin API key.';
    return;
  }
  button.disabled = true;
  $('#signin-error').textContent = '';
  setKey(key);
  try {
    // Any admin-only read proves the key; the log is what the console opens on.
    await api('GET', '/v1/logs?limit=1');
    $('#signin-key').value = '';
    say('Signed in.', 'ok');
    if (!parseHash().name || parseHash().name === 'signin') location.hash = '#/log';
    else route();
  } catch (err) {
    clearKey();
    // A 401 or 403 has already come back through the auth handler; other failures are shown here.
    if (!(err instanceof ApiError && (err.status === 401 || err.status === 403))) {
      $('#signin-error').textContent = `Could not sign in: ${err.message}`;
    }
  } finally {
    button.disabled = false;
  }
}

setAuthErrorHandler((err) => {
  const why = err.status === 401 ? 'The key was refused' : 'This key is not an admin key of the workspace';
  signOut(`${why}: ${err.message}`);
  say('');
});

function start() {
  $('#signin-form').addEventListener('submit', signIn);
  $('#signout').addEventListener('click', () => {
    signOut('Signed out.');
  });
  window.addEventListener('hashchange', route);
  route();
}

// A module script runs deferred, after parsing: the document is ready unless the browser is unusual.
if (document.readyState === 'loading') document.addEventListener('DOMContentLoaded', start);
else start();
