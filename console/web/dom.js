// Small DOM helpers. Server data only ever reaches the page as text (textContent, attribute values), never as
// markup: an entry's model or a check's error message cannot inject HTML.

// h builds an element. attrs: "class", "text" (its textContent), "data" (dataset entries), "on<event>"
// (listeners), anything else as an attribute (a false or null value leaves it out). Children may be strings
// (added as text), nodes, or null (skipped).
export function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs)) {
    if (value === null || value === undefined || value === false) continue;
    if (name === 'class') el.className = value;
    else if (name === 'text') el.textContent = String(value);
    else if (name === 'data') Object.assign(el.dataset, value);
    else if (name.startsWith('on')) el.addEventListener(name.slice(2), value);
    else el.setAttribute(name, value === true ? '' : String(value));
  }
  for (const child of children.flat()) {
    if (child === null || child === undefined || child === false) continue;
    el.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return el;
}

export function $(selector, root = document) {
  return root.querySelector(selector);
}

export function clear(el) {
  el.replaceChildren();
  return el;
}

// say puts a message on the global status line (role=status, read out by screen readers).
export function say(message, kind = 'info') {
  const el = document.getElementById('status');
  el.textContent = message;
  el.className = kind;
}

export function fmtTime(unixSeconds) {
  if (!Number.isFinite(unixSeconds)) return '';
  return new Date(unixSeconds * 1000).toLocaleString();
}

// fmtClock shows a time of today as the time alone, an older one with its date.
export function fmtClock(unixSeconds) {
  if (!Number.isFinite(unixSeconds)) return '';
  const d = new Date(unixSeconds * 1000);
  return d.toDateString() === new Date().toDateString() ? d.toLocaleTimeString() : d.toLocaleString();
}

// fmtStamp shows an RFC 3339 stamp in local time, or the text as given when it does not parse.
export function fmtStamp(s) {
  if (!s) return '';
  const d = new Date(s);
  return Number.isNaN(d.getTime()) ? String(s) : d.toLocaleString();
}

export function fmtMs(ms) {
  if (ms === null || ms === undefined || !Number.isFinite(ms)) return '';
  return ms < 10 ? ms.toFixed(2) : ms < 100 ? ms.toFixed(1) : Math.round(ms).toString();
}

export function fmtCost(usd) {
  if (usd === null || usd === undefined || !Number.isFinite(usd)) return '';
  return usd === 0 ? '0' : usd < 0.01 ? usd.toPrecision(2) : usd.toFixed(4);
}

export function fmtInt(n) {
  return n === null || n === undefined ? '' : Number(n).toLocaleString();
}

// pretty shows a JSON value indented; a string that holds JSON is parsed first (truncated bodies are strings).
export function pretty(value) {
  if (typeof value === 'string') {
    try {
      return JSON.stringify(JSON.parse(value), null, 2);
    } catch {
      return value;
    }
  }
  return JSON.stringify(value, null, 2);
}
