// engram dashboard: talks to the service's public JSON API only, sending the
// user's token or key with each call. Stored text reaches the page only
// through textContent and attribute setters (see el below), never as markup.
'use strict';

const ALL = '\u0000all'; // the session select's "all sessions" value; no session name holds NUL

// ---------- DOM helpers ----------

// el builds an element: attrs are set as properties or attributes, children
// are nodes or strings (strings become text nodes, so markup in data stays text).
function el(tag, attrs, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k === 'class') e.className = v;
    else if (k === 'text') e.textContent = v;
    else if (k.startsWith('on')) e.addEventListener(k.slice(2), v);
    else if (k === 'dataset') Object.assign(e.dataset, v);
    else e.setAttribute(k, v === true ? '' : String(v));
  }
  for (const c of children.flat()) {
    if (c === undefined || c === null || c === false) continue;
    e.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return e;
}

const $ = (sel) => document.querySelector(sel);
function clear(node) { while (node.firstChild) node.removeChild(node.firstChild); return node; }
function fill(tbody, rows) { clear(tbody); for (const r of rows) tbody.append(r); }

function fmtTime(t) {
  if (!t || t.startsWith('0001-')) return '';
  const d = new Date(t);
  return isNaN(d) ? String(t) : d.toISOString().replace('T', ' ').slice(0, 19);
}
function fmtNum(x, digits) { return (typeof x === 'number') ? x.toFixed(digits) : ''; }
function fmtBytes(n) {
  if (typeof n !== 'number') return '';
  const u = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let i = 0;
  while (n >= 1024 && i < u.length - 1) { n /= 1024; i++; }
  return (i ? n.toFixed(1) : String(n)) + ' ' + u[i];
}
// part reads a score part: lower-case JSON names, or the capitalized ones
// of servers that send the Go field names.
function part(sc, name) {
  if (!sc) return undefined;
  const v = sc[name];
  return v !== undefined ? v : sc[name.charAt(0).toUpperCase() + name.slice(1)];
}
// pick reads a field by its snake_case JSON name, or by the Go field name
// (DiskBytes for disk_bytes) that older servers send.
function pick(o, name) {
  if (!o) return undefined;
  if (o[name] !== undefined) return o[name];
  return o[name.split('_').map((w) => w.charAt(0).toUpperCase() + w.slice(1)).join('')];
}
function sessionLabel(s) { return s === '' ? '""' : s; }
function oneLine(s, n) { s = String(s).replace(/\s+/g, ' ').trim(); return s.length > n ? s.slice(0, n - 1) + '…' : s; }

function banner(msg, ok) {
  const b = $('#banner');
  b.textContent = msg || '';
  b.className = ok ? 'ok' : '';
  b.hidden = !msg;
}

// ---------- API ----------

class APIError extends Error {
  constructor(status, msg) { super(msg); this.status = status; }
}

function key() { return sessionStorage.getItem('engram.key') || ''; }

// api calls the JSON API. Bodies are JSON (the server refuses anything else);
// a POST without arguments sends {}.
async function api(method, path, body) {
  const headers = { 'Accept': 'application/json' };
  if (key()) headers['Authorization'] = 'Bearer ' + key();
  const opts = { method, headers, credentials: 'omit', cache: 'no-store' };
  if (body !== undefined || method === 'POST' || method === 'PATCH') {
    headers['Content-Type'] = 'application/json';
    opts.body = typeof body === 'string' ? body : JSON.stringify(body === undefined ? {} : body);
  }
  const r = await fetch(path, opts);
  const text = await r.text();
  let data = null;
  try { data = text ? JSON.parse(text) : null; } catch (_) { data = null; }
  if (!r.ok) {
    let msg = (data && data.error) || (r.status + ' ' + r.statusText);
    if (r.status === 401) msg = 'The server wants a token or API key: enter it at the top right. (' + msg + ')';
    if (r.status === 403) msg = 'Not allowed with this key: ' + msg;
    throw new APIError(r.status, msg);
  }
  return data;
}

// hasRoute reports whether an API error means the route does not exist on
// this server (older servers lack some routes the dashboard can use).
function noRoute(err) { return err instanceof APIError && (err.status === 404 || err.status === 405) && /no route/.test(err.message); }

// runJob starts a job and polls it until it ends; onProgress gets each state.
async function runJob(path, body, onProgress) {
  let job = await api('POST', path, body);
  for (;;) {
    if (onProgress) onProgress(job);
    if (job.state !== 'running') break;
    await new Promise((res) => setTimeout(res, 250));
    job = await api('GET', '/v1/jobs/' + encodeURIComponent(job.id));
  }
  if (job.state !== 'done') throw new Error(job.kind + ' ' + job.state + ': ' + (job.error || ''));
  return job;
}

// jobLine shows a job's state and progress in target, with a Cancel button
// while it runs. Jobs count bytes (unit "bytes") or records.
function jobLine(target, job) {
  clear(target);
  const pct = job.total > 0 ? job.done / job.total : (job.state === 'running' ? null : 1);
  const prog = el('progress', { max: 1, dataset: { job: job.id } });
  if (pct !== null) prog.value = pct;
  const n = (x) => job.unit === 'bytes' ? fmtBytes(x) : String(x);
  const count = job.total > 0 ? ' ' + n(job.done) + ' / ' + n(job.total) + (job.unit && job.unit !== 'bytes' ? ' ' + job.unit : '') : '';
  target.append(el('span', { class: 'job-state', dataset: { state: job.state }, text: job.kind + ' ' + job.state + ' ' }), prog,
    el('span', { class: 'job-count', text: count }));
  if (job.state === 'running' && job.id) {
    const b = el('button', { type: 'button', class: 'cancel', text: job.cancel_requested ? 'Cancelling…' : 'Cancel' });
    b.disabled = !!job.cancel_requested;
    b.addEventListener('click', async () => {
      b.disabled = true;
      try { await api('POST', '/v1/jobs/' + encodeURIComponent(job.id) + '/cancel'); } catch (err) { banner(err.message); }
    });
    target.append(' ', b);
  }
}

// adminDenied is set once the server refused the admin right to this key:
// the admin controls are then disabled, with the reason shown.
let adminDenied = '';
function gateAdmin(err) {
  if (err instanceof APIError && (err.status === 403 || err.status === 401)) {
    adminDenied = err.message;
  }
  const note = $('#admin-note');
  note.hidden = !adminDenied;
  note.textContent = adminDenied ? 'Maintenance needs the admin right; these controls are disabled for this key. (' + adminDenied + ')' : '';
  for (const e of document.querySelectorAll('.admin button, .admin input, .admin select')) e.disabled = !!adminDenied;
}

// download saves a response body as a file, counting the bytes into
// onProgress(done, total). post sends the request as a POST of {} (a
// download that starts a job on the server, which no GET may do).
async function download(path, name, accept, onProgress, post) {
  const headers = { 'Accept': accept };
  if (key()) headers['Authorization'] = 'Bearer ' + key();
  const init = { headers, credentials: 'omit', cache: 'no-store' };
  if (post) {
    init.method = 'POST';
    init.body = '{}';
    headers['Content-Type'] = 'application/json';
  }
  const r = await fetch(path, init);
  if (!r.ok) {
    let msg = r.status + ' ' + r.statusText;
    try { msg = (await r.json()).error || msg; } catch (_) { /* not JSON */ }
    if (r.status === 403) msg = 'Not allowed with this key: ' + msg;
    throw new APIError(r.status, msg);
  }
  const total = Number(r.headers.get('Engram-Backup-Bytes') || r.headers.get('Content-Length') || 0);
  const reader = r.body.getReader();
  const parts = [];
  let done = 0;
  for (;;) {
    const { value, done: end } = await reader.read();
    if (end) break;
    parts.push(value);
    done += value.length;
    if (onProgress) onProgress(done, total);
  }
  const blob = new Blob(parts, { type: accept });
  const a = el('a', { href: URL.createObjectURL(blob), download: name });
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(a.href), 10000);
  return { bytes: done, blob };
}

// ---------- views ----------

const views = ['overview', 'memories', 'tasks', 'conversations', 'archive', 'health'];
let sessionsCache = [];

async function show(view) {
  if (!views.includes(view)) view = 'overview';
  for (const v of views) $('#view-' + v).hidden = v !== view;
  for (const a of document.querySelectorAll('#nav a')) a.classList.toggle('active', a.dataset.view === view);
  banner('');
  try {
    await loaders[view]();
  } catch (err) {
    banner(err.message);
  }
}

async function loadSessions() {
  const d = await api('GET', '/v1/sessions');
  sessionsCache = d.sessions || [];
  for (const id of ['#search-session', '#conv-session', '#export-session']) {
    const sel = $(id);
    const prev = sel.value;
    clear(sel);
    if (id !== '#conv-session') sel.append(el('option', { value: ALL, text: '(all sessions)' }));
    for (const s of sessionsCache) sel.append(el('option', { value: s.name, text: sessionLabel(s.name) + ' (' + s.memories + ')' }));
    if ([...sel.options].some((o) => o.value === prev)) sel.value = prev;
  }
  return sessionsCache;
}

const loaders = {
  async overview() {
    const ss = await loadSessions();
    const counts = $('#counts');
    clear(counts);
    let st = null;
    try { st = await api('GET', '/v1/stats'); } catch (err) { // store-wide counts need the admin right
      counts.append(el('div', { class: 'note', text: 'store counts: ' + err.message }));
    }
    if (st) 
    for (const [l, n] of ['memories', 'sessions', 'archived', 'tasks'].map((k) => [k, pick(st, k)])) {
      counts.append(el('div', { class: 'card', dataset: { count: l } }, el('div', { class: 'n', text: n }), el('div', { class: 'l', text: l })));
    }
    fill($('#sessions tbody'), ss.map((s) => el('tr', {
      class: 'clickable', dataset: { session: s.name },
      onclick: () => { location.hash = 'memories'; selectSession(s.name); },
    }, el('td', { text: sessionLabel(s.name) }), el('td', { text: s.memories }), el('td', { text: fmtTime(s.newest) }))));
    await loadPlots();
  },
  async memories() { await loadSessions(); },
  async tasks() {
    const d = await api('GET', '/v1/tasks');
    fill($('#tasks tbody'), (d.tasks || []).map((t) => el('tr', { class: 'clickable', dataset: { task: t.id }, onclick: () => showTask(t) },
      el('td', { text: t.id }), el('td', { text: oneLine(t.goal, 80) }), el('td', { text: t.status }),
      el('td', { text: (t.steps || []).length }), el('td', { text: t.next }), el('td', { text: fmtTime(t.updated) }))));
    clear($('#task-detail'));
  },
  async conversations() { await loadSessions(); },
  async archive() { await loadArchive(); },
  async health() { await loadSessions().catch(() => {}); await loadHealth(); },
};

// ---------- plots ----------

async function loadPlots() {
  let d;
  try {
    d = await api('GET', '/v1/admin/series');
  } catch (err) {
    for (const id of ['#plot-growth', '#plot-latency']) clear($(id)).append(el('div', { class: 'note', text: 'unavailable: ' + err.message }));
    return;
  }
  const pts = d.points || [];
  plot($('#plot-growth'), pts, [(p) => p.memories]);
  plot($('#plot-latency'), pts.filter((p) => p.recalls > 0), [(p) => p.recall_p50_ms, (p) => p.recall_p95_ms]);
}

const SVG = 'http://www.w3.org/2000/svg';
function svg(tag, attrs) {
  const e = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, String(v));
  return e;
}

// plot draws one line per getter over the points' times.
function plot(target, pts, getters) {
  clear(target);
  if (pts.length === 0) { target.append(el('div', { class: 'note', text: 'no data yet' })); return; }
  const W = 600, H = 160, L = 44, B = 18;
  const ts = pts.map((p) => Date.parse(p.t));
  const t0 = Math.min(...ts), t1 = Math.max(...ts);
  let ymax = 0;
  for (const g of getters) for (const p of pts) ymax = Math.max(ymax, g(p) || 0);
  if (ymax === 0) ymax = 1;
  const x = (t) => L + (t1 === t0 ? (W - L) / 2 : (t - t0) / (t1 - t0) * (W - L - 6));
  const y = (v) => H - B - (v / ymax) * (H - B - 8);
  const s = svg('svg', { viewBox: '0 0 ' + W + ' ' + H, preserveAspectRatio: 'none', role: 'img' });
  s.append(svg('line', { class: 'axis', x1: L, y1: H - B, x2: W, y2: H - B }), svg('line', { class: 'axis', x1: L, y1: 4, x2: L, y2: H - B }));
  const lab = (text, attrs) => { const t = svg('text', attrs); t.textContent = text; return t; };
  s.append(lab(ymax > 10 ? Math.round(ymax) : ymax.toFixed(2), { x: 2, y: 12 }), lab('0', { x: 2, y: H - B }));
  s.append(lab(fmtTime(new Date(t0).toISOString()).slice(11), { x: L, y: H - 4 }), lab(fmtTime(new Date(t1).toISOString()).slice(11), { x: W - 50, y: H - 4 }));
  getters.forEach((g, i) => {
    const d = pts.map((p, j) => x(ts[j]).toFixed(1) + ',' + y(g(p) || 0).toFixed(1)).join(' ');
    s.append(svg('polyline', { class: 's' + i, points: d }));
    if (pts.length <= 30) { // few points: mark each, so a single one shows
      pts.forEach((p, j) => s.append(svg('circle', { class: 'dot' + i, cx: x(ts[j]).toFixed(1), cy: y(g(p) || 0).toFixed(1), r: 2.5 })));
    }
  });
  target.append(s);
}

// ---------- memories: search, browse, detail ----------

function selectSession(name) {
  const sel = $('#search-session');
  if (![...sel.options].some((o) => o.value === name)) sel.append(el('option', { value: name, text: sessionLabel(name) }));
  sel.value = name;
  search();
}

let lastResults = [];

// searchFilter is the JSON filter (docs/format/filter.md) the tag, source and
// filter inputs ask for, or null.
function searchFilter() {
  const parts = [];
  const tag = $('#search-tag').value.trim(), source = $('#search-source').value.trim(), where = $('#search-where').value.trim();
  if (tag) parts.push({ tags: tag });
  if (source) parts.push({ source: source });
  if (where) {
    try { parts.push(JSON.parse(where)); } catch (err) { throw new Error('the filter is not JSON: ' + err.message); }
  }
  if (parts.length === 0) return null;
  return parts.length === 1 ? parts[0] : { and: parts };
}

async function search(ev) {
  if (ev) ev.preventDefault();
  const q = $('#search-query').value.trim();
  const session = $('#search-session').value;
  $('#detail').hidden = true;
  banner('');
  try {
    if (q === '') await browse(session);
    else {
      const req = {
        query: q, k: Number($('#search-k').value) || 10, mode: $('#search-mode').value, fusion: $('#search-fusion').value,
        min_score: Number($('#search-min').value) || 0, no_decay: $('#search-nodecay').checked, no_touch: true,
      };
      if (session === ALL) req.all_sessions = true; else req.session = session;
      const f = searchFilter();
      if (f) req.filter = f;
      const d = await api('POST', '/v1/recall', req);
      showResults(d.results || [], (d.results || []).length + ' memories recalled (scores: final = fused × decay × weight)');
    }
  } catch (err) {
    banner(err.message);
  }
}

// browse lists memories without a query: GET /v1/memories where the server
// has it, else the admin export stream (first 200).
async function browse(session) {
  const limit = 200;
  try {
    const qs = new URLSearchParams({ limit: String(limit) });
    if (session !== ALL) qs.set('session', session);
    const f = searchFilter();
    if (f) qs.set('where', JSON.stringify(f));
    const d = await api('GET', '/v1/memories?' + qs);
    showResults(d.memories || d.results || [], 'browsing (newest first)');
    return;
  } catch (err) {
    if (!noRoute(err)) throw err;
  }
  const qs = new URLSearchParams();
  if (session !== ALL) qs.set('session', session);
  const headers = { 'Accept': 'application/x-ndjson' };
  if (key()) headers['Authorization'] = 'Bearer ' + key();
  const r = await fetch('/v1/admin/export?' + qs, { headers, credentials: 'omit', cache: 'no-store' });
  if (!r.ok) {
    let msg = r.status + ' ' + r.statusText;
    try { msg = (await r.json()).error || msg; } catch (_) { /* not JSON */ }
    throw new APIError(r.status, 'browsing needs the admin right on this server: ' + msg);
  }
  const reader = r.body.getReader();
  const dec = new TextDecoder();
  let buf = '', out = [];
  while (out.length < limit) {
    const { value, done } = await reader.read();
    if (done) break;
    buf += dec.decode(value, { stream: true });
    let i;
    while ((i = buf.indexOf('\n')) >= 0 && out.length < limit) {
      const line = buf.slice(0, i); buf = buf.slice(i + 1);
      if (line.trim()) out.push(JSON.parse(line));
    }
  }
  reader.cancel().catch(() => {});
  out.sort((a, b) => Date.parse(b.updated) - Date.parse(a.updated));
  showResults(out, 'browsing ' + out.length + (out.length === limit ? '+' : '') + ' memories (newest first)');
}

function showResults(results, note) {
  lastResults = results;
  $('#results-note').textContent = note;
  fill($('#results tbody'), results.map((m) => el('tr', { class: 'clickable', dataset: { id: m.id }, onclick: () => showDetail(m) },
    el('td', { class: 'text', text: oneLine(m.text, 120) }), el('td', { text: sessionLabel(m.session) }),
    el('td', { text: m.source || '' }), el('td', { text: fmtTime(m.updated) }),
    el('td', { class: 'score', text: m.score ? fmtNum(part(m.score, 'final'), 4) : '' }))));
}

// scoreBars shows the score parts on the scale of the final score: the
// keyword part is keyword_norm (BM25 over the query's best, as fusion uses
// it); the raw BM25 score is in its tooltip. Servers without keyword_norm
// show the raw score.
function scoreBars(sc) {
  const norm = part(sc, 'keyword_norm') !== undefined ? part(sc, 'keyword_norm') : part(sc, 'keywordNorm');
  const rows = ['vector', 'keyword', 'fused', 'decay', 'weight', 'final'].map((n) => [n, n === 'keyword' && norm !== undefined ? norm : part(sc, n)]);
  const box = el('div', { class: 'bars', id: 'score-bars' });
  for (const [name, v] of rows) {
    const w = Math.max(0, Math.min(1, v || 0)) * 100;
    const span = el('span');
    span.style.width = w.toFixed(1) + '%';
    const num = el('span', { class: 'score', dataset: { part: name }, text: fmtNum(v, 4) });
    if (name === 'keyword' && norm !== undefined) num.title = 'BM25 ' + fmtNum(part(sc, 'keyword'), 4) + ' over the best among the candidates';
    box.append(el('span', { text: name }), el('div', { class: 'bar' }, span), num);
  }
  return box;
}

async function showDetail(m) {
  const box = $('#detail');
  box.hidden = false;
  clear(box);
  let full = m;
  try { // the full record, where the server has GET /v1/memories/{id}
    const d = await api('GET', '/v1/memories/' + encodeURIComponent(m.id));
    full = Object.assign({}, m, d.memory || d);
  } catch (err) {
    if (!noRoute(err) && !(err instanceof APIError && err.status === 404)) banner(err.message);
  }
  const kv = el('table', { class: 'kv' }, el('tbody', {},
    [['id', full.id], ['session', sessionLabel(full.session)], ['source', full.source || ''], ['importance', full.importance],
      ['created', fmtTime(full.created)], ['updated', fmtTime(full.updated)], ['last access', fmtTime(full.last_access)],
      ['access count', full.access_count || 0]].map(([k, v]) => el('tr', {}, el('td', { text: k }), el('td', { text: v })))));
  const status = el('div', { id: 'detail-status', class: 'note' });
  const forgetBtn = el('button', { id: 'forget', class: 'danger', type: 'button', text: 'Forget' });
  forgetBtn.addEventListener('click', () => forget(full, forgetBtn, status));
  box.append(
    el('h3', { text: 'Memory' }),
    el('div', { id: 'detail-text', class: 'text', text: full.text }),
    el('div', {}, (full.tags || []).map((t) => el('span', { class: 'tag', text: t }))),
    m.score ? el('div', {}, el('h2', { text: 'Why it came back' }), scoreBars(m.score)) : null,
    kv,
    el('div', { class: 'actions' }, forgetBtn),
    status,
    el('h2', { text: 'History' }),
    el('div', { id: 'history', class: 'note', text: 'loading…' }),
  );
  loadHistory(full.id);
}

async function loadHistory(id) {
  const target = $('#history');
  try {
    const d = await api('GET', '/v1/memories/' + encodeURIComponent(id) + '/history');
    const vs = d.versions || [];
    clear(target);
    if (vs.length === 0) target.textContent = 'no history recorded';
    for (const v of vs) {
      const m = v.memory || {};
      target.append(el('div', { class: 'version', dataset: { version: v.version } },
        el('span', { class: 'tag', text: 'v' + v.version + ' ' + (v.change || '') }),
        el('span', { text: fmtTime(v.at) + '  ' }), el('span', { class: 'text', text: m.text || '' })));
    }
  } catch (err) {
    target.textContent = noRoute(err) ? 'this server keeps no memory history' : err.message;
  }
}

// forget asks for a second click, then forgets the memory and offers to
// restore it: POST /v1/restore brings back the same ID, text, metadata,
// vector and history while the store keeps forgotten memories; a store that
// forgets for good gets an import of the record as it was shown.
async function forget(m, btn, status) {
  if (btn.dataset.armed !== '1') {
    btn.dataset.armed = '1';
    btn.textContent = 'Really forget?';
    return;
  }
  btn.disabled = true;
  try {
    const d = await api('POST', '/v1/forget', { ids: [m.id] });
    const row = document.querySelector('#results tr[data-id="' + CSS.escape(m.id) + '"]');
    if (row) row.remove();
    clear(status).append(el('span', { text: d.forgotten === 1 ? 'Forgotten. ' : 'Nothing to forget (already gone). ' }));
    if (d.restorable) status.append(el('span', { id: 'restorable', text: 'Restorable until ' + fmtTime(d.purge_after).slice(0, 10) + '. ' }));
    const restore = el('button', { id: 'restore', type: 'button', text: 'Restore' });
    restore.addEventListener('click', () => restoreForgotten(m, d.restorable, restore, status));
    const purge = el('button', { id: 'purge', type: 'button', class: 'danger', text: 'Delete for good' });
    purge.addEventListener('click', () => purgeMemory(m.id, purge, status));
    status.append(restore, ' ', purge);
  } catch (err) {
    btn.disabled = false;
    banner(err.message);
  }
}

function memoryRecord(m) {
  const rec = { id: m.id, session: m.session, text: m.text, importance: m.importance, created: m.created, updated: m.updated };
  if (m.source) rec.source = m.source;
  if (m.tags && m.tags.length) rec.tags = m.tags;
  if (m.last_access && !m.last_access.startsWith('0001-')) rec.last_access = m.last_access;
  if (m.metadata && Object.keys(m.metadata).length) rec.metadata = m.metadata;
  if (m.access_count) rec.access_count = m.access_count;
  return rec;
}

async function restoreForgotten(m, restorable, btn, status) {
  btn.disabled = true;
  try {
    if (restorable) await api('POST', '/v1/restore', { ids: [m.id] });
    else await runJob('/v1/admin/import', memoryRecord(m), (job) => jobLine(status, job));
    clear(status).append(el('span', { id: 'restored', text: 'Restored (same ID ' + m.id + ').' }));
    banner('Memory restored', true);
  } catch (err) {
    btn.disabled = false;
    banner(err.message);
  }
}

async function purgeMemory(id, btn, status) {
  if (btn.dataset.armed !== '1') {
    btn.dataset.armed = '1';
    btn.textContent = 'Really delete for good?';
    return;
  }
  btn.disabled = true;
  try {
    const d = await api('POST', '/v1/forget', { ids: [id], purge: true });
    clear(status).append(el('span', { id: 'purged', text: 'Deleted for good (' + d.forgotten + ').' }));
  } catch (err) {
    btn.disabled = false;
    banner(err.message);
  }
}

// ---------- tasks and conversations ----------

function showTask(t) {
  const box = clear($('#task-detail'));
  box.append(el('h2', { text: 'Task ' + t.id }), el('div', { class: 'text', text: t.goal }),
    el('table', {}, el('thead', {}, el('tr', {}, ['Step', 'Status', 'Result', 'Updated'].map((h) => el('th', { text: h })))),
      el('tbody', {}, (t.steps || []).map((s) => el('tr', {}, el('td', { text: s.name }), el('td', { text: s.status }),
        el('td', {}, s.result === undefined ? '' : el('pre', { text: JSON.stringify(s.result, null, 2) })), el('td', { text: fmtTime(s.updated) }))))));
}

async function showConversation(ev) {
  if (ev) ev.preventDefault();
  const s = $('#conv-session').value;
  const box = clear($('#conversation'));
  try {
    const c = await api('GET', '/v1/sessions/' + encodeURIComponent(s) + '/context');
    box.append(el('h2', { text: 'Summary' + (c.compressed ? ' (' + c.compressed + ' turns compressed)' : '') }),
      el('div', { class: 'text', text: c.summary || '(none)' }), el('h2', { text: 'Recent turns' }));
    if (!c.turns || c.turns.length === 0) box.append(el('div', { class: 'note', text: 'no turns' }));
    for (const t of c.turns || []) box.append(el('div', { class: 'turn' }, el('div', { class: 'role', text: t.role + ' · ' + fmtTime(t.time) }), el('div', { class: 'text', text: t.text })));
  } catch (err) {
    banner(err.message);
  }
}

// ---------- archive ----------

async function loadArchive() {
  await loadForgotten();
  let d;
  try {
    d = await api('GET', '/v1/admin/archive');
  } catch (err) {
    gateAdmin(err);
    $('#cleanup-out').textContent = 'archive: ' + err.message;
    return;
  }
  const ms = d.memories || [];
  fill($('#archive tbody'), ms.map((m) => {
    const btn = el('button', { type: 'button', text: 'Restore', dataset: { restore: m.id } });
    btn.addEventListener('click', async () => {
      btn.disabled = true;
      try {
        const job = await runJob('/v1/admin/archive/restore', { ids: [m.id] }, (j) => jobLine($('#cleanup-out'), j));
        $('#cleanup-out').textContent = 'restored ' + JSON.parse(JSON.stringify(job.result)).restored + ' memory';
        await loadArchive();
      } catch (err) { btn.disabled = false; banner(err.message); }
    });
    const purge = el('button', { type: 'button', class: 'danger', text: 'Delete for good', dataset: { purgeArchived: m.id } });
    purge.addEventListener('click', async () => {
      if (purge.dataset.armed !== '1') { purge.dataset.armed = '1'; purge.textContent = 'Really?'; return; }
      purge.disabled = true;
      try {
        await api('POST', '/v1/forget', { ids: [m.id], purge: true });
        await loadArchive();
        $('#cleanup-out').textContent = 'deleted ' + m.id + ' for good';
      } catch (err) { purge.disabled = false; banner(err.message); }
    });
    return el('tr', { dataset: { id: m.id } }, el('td', { class: 'text', text: oneLine(m.text, 120) }), el('td', { text: sessionLabel(m.session) }),
      el('td', { text: fmtTime(m.updated) }), el('td', {}, btn, ' ', purge));
  }));
  if (ms.length === 0) $('#cleanup-out').textContent = $('#cleanup-out').textContent || 'the archive is empty';
}

// loadForgotten lists the trash in this key's scope (read right).
async function loadForgotten() {
  const out = $('#trash-out');
  let d;
  try {
    d = await api('GET', '/v1/forgotten');
  } catch (err) {
    out.textContent = noRoute(err) ? 'this server keeps no forgotten memories' : err.message;
    return;
  }
  const ms = d.memories || [];
  out.textContent = ms.length === 0 ? 'nothing forgotten' : ms.length + ' forgotten';
  fill($('#forgotten tbody'), ms.map((m) => {
    const restore = el('button', { type: 'button', text: 'Restore', dataset: { unforget: m.id } });
    restore.addEventListener('click', async () => {
      restore.disabled = true;
      try {
        const r = await api('POST', '/v1/restore', { ids: [m.id] });
        await loadForgotten();
        out.textContent = 'restored ' + r.restored + ' memory (same ID ' + m.id + ')';
      } catch (err) { restore.disabled = false; banner(err.message); }
    });
    const purge = el('button', { type: 'button', class: 'danger', text: 'Delete for good', dataset: { purge: m.id } });
    purge.addEventListener('click', async () => {
      if (purge.dataset.armed !== '1') { purge.dataset.armed = '1'; purge.textContent = 'Really?'; return; }
      purge.disabled = true;
      try { await api('POST', '/v1/forget', { ids: [m.id], purge: true }); await loadForgotten(); } catch (err) { purge.disabled = false; banner(err.message); }
    });
    return el('tr', { dataset: { id: m.id } }, el('td', { class: 'text', text: oneLine(m.text, 120) }), el('td', { text: sessionLabel(m.session) }),
      el('td', { text: fmtTime(m.forgotten) }), el('td', { text: fmtTime(m.purge_after).slice(0, 10) }), el('td', {}, restore, ' ', purge));
  }));
}

async function cleanup(dry) {
  const out = $('#cleanup-out');
  try {
    const job = await runJob('/v1/admin/cleanup', { dry_run: dry, older_than: $('#cleanup-age').value.trim(), include_recalled: $('#cleanup-recalled').checked },
      (j) => jobLine(out, j));
    const r = job.result;
    clear(out).append(el('div', { text: (dry ? 'would archive ' : 'archived ') + r.memories.length + ' memories' }));
    for (const m of r.memories.slice(0, 50)) out.append(el('div', { class: 'text', text: fmtTime(m.updated).slice(0, 10) + '  ' + oneLine(m.text, 100) }));
    if (!dry) await loadArchive();
  } catch (err) { banner(err.message); }
}

// ---------- health ----------

async function loadHealth() {
  let st, jobs;
  try {
    [st, jobs] = await Promise.all([api('GET', '/v1/admin/stats'), api('GET', '/v1/jobs')]);
  } catch (err) {
    gateAdmin(err);
    throw err;
  }
  adminDenied = '';
  gateAdmin(null);
  const b = pick(st, 'backend') || {};
  fill($('#store-stats tbody'), [['store', pick(st, 'dir') || ''], ['collection', pick(st, 'collection')], ['embedder', pick(st, 'fingerprint')], ['dimension', pick(st, 'dim')],
    ['memories', pick(st, 'memories')], ['sessions', pick(st, 'sessions')], ['archived', pick(st, 'archived')], ['forgotten', pick(st, 'forgotten') || 0], ['tasks', pick(st, 'tasks')],
    ['disk', fmtBytes(pick(b, 'disk_bytes'))], ['segments', pick(b, 'segments')], ['WAL', fmtBytes(pick(b, 'wal_bytes'))], ['in memory', fmtBytes(pick(b, 'mem_bytes'))]]
    .map(([k, v]) => el('tr', {}, el('td', { text: k }), el('td', { dataset: { stat: k }, text: v }))));
  fill($('#jobs tbody'), (jobs.jobs || []).map((j) => {
    const prog = el('td');
    jobLine(prog, j);
    const cancel = j.state === 'running' ? el('button', { type: 'button', text: 'Cancel', onclick: async () => {
      try { await api('POST', '/v1/jobs/' + encodeURIComponent(j.id) + '/cancel'); await loadHealth(); } catch (err) { banner(err.message); }
    } }) : null;
    return el('tr', { dataset: { job: j.id, kind: j.kind, state: j.state } }, el('td', { text: j.id }), el('td', { text: j.kind }), el('td', { text: j.state + (j.error ? ': ' + j.error : '') }), prog,
      el('td', { text: fmtTime(j.started) }), el('td', {}, cancel));
  }));
}

async function healthJob(path, body, out) {
  out = out || $('#health-out');
  try {
    const job = await runJob(path, body || {}, (j) => jobLine(out, j));
    const r = job.result || {};
    const count = el('span', { class: 'job-count', text: job.total > 0 ? ' (' + (job.unit === 'bytes' ? fmtBytes(job.total) : job.total + ' ' + (job.unit || '')) + ')' : '' });
    if (job.kind === 'check') out.textContent = r.ok ? 'check: ok' + (r.unknown ? ' (unknown files: ' + r.unknown.join(', ') + ')' : '') : 'check found a problem: ' + r.error;
    else if (job.kind === 'compact') out.textContent = 'compacted: disk ' + fmtBytes(pick(r.before, 'disk_bytes')) + ' → ' + fmtBytes(pick(r.after, 'disk_bytes')) + ', segments ' + pick(r.before, 'segments') + ' → ' + pick(r.after, 'segments');
    else if (job.kind === 'backup') out.textContent = 'backed up into ' + r.dir;
    else if (job.kind === 'import') out.textContent = 'imported ' + r.imported + ' memories and ' + r.records + ' records';
    else if (job.kind === 'reembed') out.textContent = 're-embedded with ' + r.to + ' (' + r.fingerprint + ')';
    out.dataset.done = job.kind;
    out.append(count);
    await loadHealth();
  } catch (err) { banner(err.message); await loadHealth().catch(() => {}); }
}

async function exportDownload(ev) {
  if (ev) ev.preventDefault();
  const out = $('#admin-out');
  const qs = new URLSearchParams();
  const s = $('#export-session').value;
  if (s !== ALL) qs.set('session', s);
  if ($('#export-vectors').checked) qs.set('vectors', 'true');
  try {
    const res = await download('/v1/admin/export?' + qs, 'engram-export.jsonl', 'application/x-ndjson',
      (done) => { out.textContent = 'exporting… ' + fmtBytes(done); });
    const lines = (await res.blob.text()).split('\n').filter((l) => l.trim()).length;
    out.textContent = 'exported ' + lines + ' lines (' + fmtBytes(res.bytes) + ') to engram-export.jsonl';
    out.dataset.done = 'export';
  } catch (err) { banner(err.message); }
}

async function backupDownload() {
  const out = $('#admin-out');
  try {
    const res = await download('/v1/admin/backup.tar', 'engram-backup.tar', 'application/x-tar', (done, total) => {
      jobLine(out, { kind: 'backup.tar', state: 'running', unit: 'bytes', done, total });
    }, true);
    out.textContent = 'downloaded a backup of ' + fmtBytes(res.bytes) + ' (engram-backup.tar)';
    out.dataset.done = 'backup.tar';
  } catch (err) { banner(err.message); }
}

async function importUpload() {
  const f = $('#import-file').files[0];
  if (!f) { banner('choose an export file to import first'); return; }
  const text = await f.text();
  await healthJob('/v1/admin/import', text, $('#admin-out'));
}

// ---------- wiring ----------

document.addEventListener('DOMContentLoaded', () => {
  $('#key').value = key();
  $('#key-form').addEventListener('submit', (ev) => {
    ev.preventDefault();
    sessionStorage.setItem('engram.key', $('#key').value.trim());
    show(location.hash.slice(1));
  });
  $('#search-form').addEventListener('submit', search);
  $('#search-session').addEventListener('change', () => search());
  $('#conv-form').addEventListener('submit', showConversation);
  $('#cleanup-form').addEventListener('submit', (ev) => { ev.preventDefault(); cleanup(true); });
  $('#cleanup-run').addEventListener('click', () => cleanup(false));
  $('#restore-all').addEventListener('click', async () => {
    try { await runJob('/v1/admin/archive/restore', { all: true }, (j) => jobLine($('#cleanup-out'), j)); await loadArchive(); } catch (err) { banner(err.message); }
  });
  $('#do-check').addEventListener('click', () => healthJob('/v1/admin/check'));
  $('#do-compact').addEventListener('click', () => healthJob('/v1/admin/compact'));
  $('#backup-form').addEventListener('submit', (ev) => { ev.preventDefault(); healthJob('/v1/admin/backup', { dir: $('#backup-dir').value.trim() }, $('#admin-out')); });
  $('#do-backup-download').addEventListener('click', backupDownload);
  $('#export-form').addEventListener('submit', exportDownload);
  $('#do-import').addEventListener('click', importUpload);
  $('#reembed-form').addEventListener('submit', (ev) => { ev.preventDefault(); healthJob('/v1/admin/reembed', { to: $('#reembed-to').value.trim() }, $('#admin-out')); });
  $('#trash-empty').addEventListener('click', async (ev) => {
    const b = ev.target;
    if (b.dataset.armed !== '1') { b.dataset.armed = '1'; b.textContent = 'Really delete every forgotten memory?'; return; }
    b.dataset.armed = ''; b.textContent = 'Empty the trash (delete for good)';
    try { const d = await api('POST', '/v1/admin/forgotten/purge'); await loadForgotten(); $('#trash-out').textContent = 'purged ' + d.purged; } catch (err) { banner(err.message); }
  });
  $('#do-flush').addEventListener('click', async () => {
    try { await api('POST', '/v1/admin/flush'); $('#health-out').textContent = 'flushed'; await loadHealth(); } catch (err) { banner(err.message); }
  });
  window.addEventListener('hashchange', () => show(location.hash.slice(1)));
  show(location.hash.slice(1));
});
