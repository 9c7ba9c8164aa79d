// The overview (#/overview): GET /v1/logs/stats over the last hour or day, drawn with the vendored uPlot.

import uPlot from './vendor/uPlot.esm.js';
import { api } from './api.js';
import { $, clear, fmtCost, fmtInt, fmtMs, h, say } from './dom.js';

const RANGES = {
  hour: { seconds: 3600, bucket: 60 },
  day: { seconds: 86400, bucket: 900 },
};
const HEIGHT = 220;

let bound = false;
let charts = [];
let ctl = null;

export const overviewPage = {
  enter() {
    if (!bound) {
      bound = true;
      $('#overview-form').addEventListener('submit', (e) => {
        e.preventDefault();
        load();
      });
      $('#overview-range').addEventListener('change', load);
      window.addEventListener('resize', resize);
    }
    load();
  },
  leave() {
    if (ctl) ctl.abort();
    ctl = null;
    destroy();
  },
};

function destroy() {
  for (const c of charts) c.plot.destroy();
  charts = [];
}

function resize() {
  for (const c of charts) {
    const w = c.el.clientWidth;
    if (w > 0) c.plot.setSize({ width: w, height: HEIGHT });
  }
}

async function load() {
  const range = RANGES[$('#overview-range').value] || RANGES.hour;
  const to = Math.floor(Date.now() / 1000);
  const from = to - range.seconds;
  if (ctl) ctl.abort();
  const mine = new AbortController();
  ctl = mine;
  try {
    const q = new URLSearchParams({ from: String(from), to: String(to), bucket: String(range.bucket) });
    const stats = await api('GET', `/v1/logs/stats?${q}`, { signal: mine.signal });
    if (ctl !== mine) return;
    draw(stats, from, to);
  } catch (err) {
    if (err.name === 'AbortError') return;
    say(`Could not read the statistics: ${err.message}`, 'error');
  } finally {
    if (ctl === mine) ctl = null;
  }
}

// grid lays the answer's buckets (only those with requests) on a full time axis, so a quiet minute shows as 0.
function grid(stats, from, to) {
  const bucket = Number(stats?.bucket_seconds) > 0 ? Number(stats.bucket_seconds) : 60;
  const rows = Array.isArray(stats?.data) ? stats.data : [];
  const byT = new Map(rows.map((r) => [Number(r.t), r]));
  const origin = rows.length ? Number(rows[0].t) - Math.floor((Number(rows[0].t) - from) / bucket) * bucket : from;
  const ts = new Set(byT.keys());
  for (let t = origin; t <= to && ts.size < 2000; t += bucket) ts.add(t);
  const xs = [...ts].sort((a, b) => a - b);
  const col = (f, empty) => xs.map((t) => (byT.has(t) ? f(byT.get(t)) : empty));
  return {
    xs,
    requests: col((r) => r.requests ?? 0, 0),
    errors: col((r) => r.errors ?? 0, 0),
    p50: col((r) => r.p50_ms ?? null, null),
    p99: col((r) => r.p99_ms ?? null, null),
    input: col((r) => r.input_tokens ?? 0, 0),
    output: col((r) => r.output_tokens ?? 0, 0),
    cost: col((r) => r.cost_usd ?? 0, 0),
    rows,
  };
}

function totals(g) {
  const sum = (a) => a.reduce((s, v) => s + (Number(v) || 0), 0);
  const dl = clear($('#overview-totals'));
  const requests = sum(g.requests);
  const errors = sum(g.errors);
  const p99 = g.p99.filter((v) => v !== null);
  for (const [name, value] of [
    ['Requests', fmtInt(requests)],
    ['Errors', `${fmtInt(errors)}${requests ? ` (${((100 * errors) / requests).toFixed(1)}%)` : ''}`],
    ['Worst p99', p99.length ? `${fmtMs(Math.max(...p99))} ms` : '–'],
    ['Tokens in / out', `${fmtInt(sum(g.input))} / ${fmtInt(sum(g.output))}`],
    ['Cost USD', fmtCost(sum(g.cost)) || '0'],
  ]) {
    dl.append(h('div', {}, h('dt', { text: name }), h('dd', { text: value })));
  }
}

function cssVar(name, fallback) {
  return getComputedStyle(document.documentElement).getPropertyValue(name).trim() || fallback;
}

function draw(stats, from, to) {
  destroy();
  const g = grid(stats, from, to);
  totals(g);
  const axis = cssVar('--fg-muted', '#555');
  const gridColor = cssVar('--border', '#ddd');
  const axes = [
    { stroke: axis, grid: { stroke: gridColor }, ticks: { stroke: gridColor } },
    { stroke: axis, grid: { stroke: gridColor }, ticks: { stroke: gridColor } },
  ];
  const line = (label, stroke, extra = {}) => ({ label, stroke, width: 2, spanGaps: false, ...extra });
  const specs = [
    ['#chart-requests', [line('requests', '#2563eb'), line('errors', '#dc2626')], [g.requests, g.errors]],
    // Latency has no value for a quiet bucket: join the points across it, and draw them (one alone is no line).
    ['#chart-latency', [line('p50 ms', '#059669', { spanGaps: true, points: { show: true, size: 5 } }),
      line('p99 ms', '#d97706', { spanGaps: true, points: { show: true, size: 5 } })], [g.p50, g.p99]],
    ['#chart-tokens', [line('input', '#7c3aed'), line('output', '#db2777')], [g.input, g.output]],
    ['#chart-cost', [line('USD', '#0d9488', { value: (u, v) => (v === null ? '–' : fmtCost(v)) })], [g.cost]],
  ];
  const costAxes = [axes[0], { ...axes[1], size: 70, values: (u, splits) => splits.map((v) => fmtCost(v)) }];
  for (const [sel, series, data] of specs) {
    const el = clear($(sel));
    const width = Math.max(el.clientWidth, 240);
    const plot = new uPlot({
      width, height: HEIGHT, axes: sel === '#chart-cost' ? costAxes : axes,
      series: [{ label: 'time' }, ...series],
      scales: { x: { time: true }, y: { range: (u, min, max) => [0, max > 0 ? max * 1.1 : 1] } },
      cursor: { drag: { x: false, y: false } },
    }, [g.xs, ...data], el);
    charts.push({ plot, el });
  }
  if (g.rows.length === 0) say('No requests in this range.');
}
