/**
 * The Ferry inspector page: one panel per dataset with its statechart (laid out here from the
 * machine graph the server sends), its context, a state history, an event log (with every
 * microstep, so the path a poll took through its outcome states shows) and the commands
 * poll now / pause / resume. Live through Server-Sent Events from /inspector/events: every
 * (re)connection starts with a full `snapshot`, so a page that lost the server (a restart) resyncs
 * when it is back. An API key given as `?key=` is kept in sessionStorage and removed from the
 * address bar; `fetch` sends it as a header, the event stream (EventSource cannot) as `?key=`.
 * Plain browser JavaScript, no dependencies, nothing from another origin.
 */

const KEY_STORAGE = 'ferry-inspector-key';
const SVG = 'http://www.w3.org/2000/svg';
const MAX_LOG = 200;
const MAX_HISTORY = 40;
const RETRY_DELAYS_MS = [1_000, 2_000, 5_000, 10_000];

const page = {
  /** @type {any} */ machine: null,
  /** Numbers the panels, for ids inside their SVG that must be unique in the document. */
  panels: 0,
  /** @type {Map<string, any>} */ datasets: new Map(),
  /** Server clock minus this page's clock, from the last snapshot. */
  offsetMs: 0,
  /** @type {EventSource | null} */ source: null,
  /** @type {number | undefined} */ retryTimer: undefined,
  retryAttempt: 0,
  snapshots: 0,
};

const byId = (id) => /** @type {HTMLElement} */ (document.getElementById(id));

// ---------------------------------------------------------------------------------------------
// API key and requests
// ---------------------------------------------------------------------------------------------

function captureKeyFromUrl() {
  const url = new URL(window.location.href);
  const key = url.searchParams.get('key');
  if (key === null) return;
  sessionStorage.setItem(KEY_STORAGE, key);
  url.searchParams.delete('key');
  window.history.replaceState(null, '', `${url.pathname}${url.search}${url.hash}`);
}

function apiKey() {
  return sessionStorage.getItem(KEY_STORAGE) ?? '';
}

function authHeaders() {
  const key = apiKey();
  return key === '' ? {} : { authorization: `Bearer ${key}` };
}

function showKeyForm(show) {
  byId('key-form').hidden = !show;
}

// ---------------------------------------------------------------------------------------------
// The event stream
// ---------------------------------------------------------------------------------------------

function setConnection(status, text) {
  const element = byId('connection');
  element.dataset.connection = status;
  element.textContent = text;
}

function connect() {
  clearTimeout(page.retryTimer);
  page.source?.close();
  const url = new URL('/inspector/events', window.location.origin);
  const key = apiKey();
  if (key !== '') url.searchParams.set('key', key);
  const source = new EventSource(url);
  page.source = source;
  setConnection('connecting', 'connecting…');
  source.addEventListener('open', () => {
    page.retryAttempt = 0;
    setConnection('live', 'live');
  });
  source.addEventListener('snapshot', (message) => applySnapshot(JSON.parse(message.data)));
  source.addEventListener('inspection', (message) => applyInspection(JSON.parse(message.data)));
  source.addEventListener('dataset', (message) => applyDataset(JSON.parse(message.data)));
  source.addEventListener('error', () => {
    if (source !== page.source) return;
    if (source.readyState === EventSource.CLOSED) {
      setConnection('offline', 'disconnected');
      void recover();
    } else {
      setConnection('reconnecting', 'reconnecting…');
    }
  });
}

/** After the browser gave up on the stream: ask for a key on 401, else retry with a backoff. */
async function recover() {
  try {
    const response = await fetch('/inspector/state', { headers: authHeaders(), cache: 'no-store' });
    if (response.status === 401) {
      setConnection('unauthorized', 'API key required');
      showKeyForm(true);
      return;
    }
  } catch {
    // The server is down: retry below.
  }
  const delay = RETRY_DELAYS_MS[Math.min(page.retryAttempt, RETRY_DELAYS_MS.length - 1)];
  page.retryAttempt++;
  page.retryTimer = window.setTimeout(connect, delay);
}

// ---------------------------------------------------------------------------------------------
// State
// ---------------------------------------------------------------------------------------------

const SERVING_STATES = new Set(['serving', 'polling', 'swapping']);

function substateOf(value) {
  if (value === null || typeof value !== 'object') return null;
  const inner = Object.values(value)[0];
  return typeof inner === 'string' ? inner : null;
}

function applySnapshot(snapshot) {
  page.snapshots++;
  document.body.dataset.snapshots = String(page.snapshots);
  page.offsetMs = snapshot.serverTimeMs - Date.now();
  const machineChanged = JSON.stringify(snapshot.machine) !== JSON.stringify(page.machine);
  page.machine = snapshot.machine;
  const names = new Set(snapshot.datasets.map((info) => info.name));
  for (const [name, dataset] of page.datasets) {
    if (!names.has(name)) {
      dataset.element.remove();
      page.datasets.delete(name);
    }
  }
  for (const info of snapshot.datasets) {
    let dataset = page.datasets.get(info.name);
    if (dataset === undefined) {
      dataset = createDataset(info.name);
      page.datasets.set(info.name, dataset);
    } else if (machineChanged) {
      drawChart(dataset);
    }
    const recent = snapshot.recent[info.name] ?? [];
    if (dataset.history.length === 0) {
      for (const event of recent) {
        if (event.type === '@xstate.snapshot') recordState(dataset, event.state, event.atMs);
      }
    }
    dataset.log = [];
    for (const event of recent) logInspection(dataset, event);
    updateInfo(dataset, info);
    renderLog(dataset);
  }
  byId('empty').hidden = page.datasets.size > 0;
  byId('empty').textContent = 'No datasets are configured.';
  renderSummary();
}

function applyInspection(event) {
  const dataset = page.datasets.get(event.dataset);
  if (dataset === undefined) return;
  if (event.type === '@xstate.snapshot' && event.state !== undefined) {
    dataset.value = event.value ?? event.state;
    const info = {
      ...dataset.info,
      state: event.state,
      status: event.status ?? dataset.info.status,
      error: null,
    };
    info.ready = info.status?.servingSnapshotId != null && SERVING_STATES.has(event.state);
    updateInfo(dataset, info, event.atMs);
  }
  logInspection(dataset, event);
  renderLog(dataset);
}

function applyDataset(info) {
  const dataset = page.datasets.get(info.name);
  if (dataset === undefined) {
    // A dataset this page has not seen: resync from a fresh snapshot.
    connect();
    return;
  }
  updateInfo(dataset, info);
  renderSummary();
}

function topState(value) {
  if (typeof value === 'string') return value;
  if (value !== null && typeof value === 'object') return Object.keys(value)[0] ?? '';
  return '';
}

function updateInfo(dataset, info, atMs = Date.now() + page.offsetMs) {
  dataset.info = info;
  if (dataset.value === undefined || topState(dataset.value) !== info.state) dataset.value = info.state;
  recordState(dataset, info.state, atMs);
  renderDataset(dataset);
  renderSummary();
}

/** Appends to the history when the top-level state differs from the last one recorded. */
function recordState(dataset, state, atMs) {
  const last = dataset.history[dataset.history.length - 1];
  if (last !== undefined && last.state === state) return;
  // The arrow the machine just took, highlighted on the chart.
  dataset.lastEdge = last === undefined ? null : [last.state, state];
  dataset.history.push({ state, atMs });
  if (dataset.history.length > MAX_HISTORY) dataset.history.shift();
  renderHistory(dataset);
}

// ---------------------------------------------------------------------------------------------
// The event log: what the machine received and what it did
// ---------------------------------------------------------------------------------------------

function short(value, max = 90) {
  if (value === undefined) return '';
  const text = typeof value === 'string' ? value : JSON.stringify(value);
  return text.length > max ? `${text.slice(0, max - 1)}…` : text;
}

function describeEvent(event) {
  const type = event?.type ?? 'unknown';
  if (type === 'poll.due' || type.startsWith('xstate.after.')) return ['timer', 'scheduled check is due'];
  const done = /^xstate\.done\.actor\.(.+)$/.exec(type);
  if (done !== null) {
    const output = event.output;
    const detail =
      output === undefined || output === null
        ? ''
        : typeof output === 'object' && 'kind' in output
          ? String(output.kind)
          : short(output, 60);
    return ['event', `${done[1]} done${detail === '' ? '' : `: ${detail}`}`];
  }
  const failed = /^xstate\.error\.actor\.(.+)$/.exec(type);
  if (failed !== null)
    return ['error', `${failed[1]} failed: ${short(event.error?.message ?? event.error, 120)}`];
  if (type === 'xstate.init') return ['event', 'machine started'];
  if (type === 'snapshot.announced') return ['event', `snapshot.announced: ${event.snapshotId}`];
  return ['event', type];
}

function describeAction(action, atMs) {
  const type = action?.type;
  const params = action?.params ?? {};
  if (type === 'log') return [params.level === 'debug' ? 'log' : params.level, params.message];
  if (type === 'xstate.emit') {
    const emitted = params.event ?? {};
    if (emitted.type === 'swap') return ['swap', `swapped ${emitted.from ?? 'nothing'} → ${emitted.to}`];
    if (emitted.type === 'poll') return ['poll', `poll result: ${emitted.result}`];
    if (emitted.type === 'error') return ['error', `${emitted.error?.code}: ${emitted.error?.message}`];
    return ['emit', `emitted ${emitted.type}`];
  }
  if (type === 'xstate.spawnChild' && params.src === 'pollTimer' && typeof params.input?.dueMs === 'number') {
    return ['timer', `next check in ${((params.input.dueMs - atMs) / 1000).toFixed(1)} s`];
  }
  if (type === 'xstate.spawnChild') return ['invoke', `invoke ${params.src ?? params.id}`];
  if (type === 'xstate.raise' && typeof params.delay === 'number') {
    return ['timer', `next check in ${(params.delay / 1000).toFixed(1)} s`];
  }
  return null;
}

function logInspection(dataset, event) {
  let entry = null;
  if (event.type === '@xstate.event') entry = describeEvent(event.event);
  else if (event.type === '@xstate.action') entry = describeAction(event.action, event.atMs);
  else if (event.type === '@xstate.snapshot') entry = ['state', `→ ${valueText(event.value ?? event.state)}`];
  // Each transition of a step (eventless ones too): the outcome states a poll passed through.
  else if (event.type === '@xstate.microstep') entry = ['step', `→ ${valueText(event.value ?? event.state)}`];
  else if (event.type === '@xstate.actor' && event.root === true)
    entry = ['actor', `machine ${event.sessionId}`];
  if (entry === null) return;
  dataset.log.push({ kind: entry[0], text: entry[1], atMs: event.atMs });
  if (dataset.log.length > MAX_LOG) dataset.log.shift();
}

function valueText(value) {
  if (typeof value === 'string') return value;
  if (value === null || typeof value !== 'object') return String(value);
  return Object.entries(value)
    .map(([key, inner]) => `${key}.${valueText(inner)}`)
    .join(', ');
}

// ---------------------------------------------------------------------------------------------
// Rendering
// ---------------------------------------------------------------------------------------------

function createDataset(name) {
  const template = /** @type {HTMLTemplateElement} */ (byId('dataset-template'));
  const element = /** @type {HTMLElement} */ (template.content.firstElementChild.cloneNode(true));
  element.dataset.dataset = name;
  element.querySelector('.dataset-name').textContent = name;
  page.panels++;
  const dataset = {
    name,
    element,
    id: `panel-${page.panels}`,
    info: null,
    value: undefined,
    history: [],
    log: [],
    lastEdge: null,
    chart: null,
    pending: false,
  };
  for (const button of element.querySelectorAll('button[data-command]')) {
    button.addEventListener('click', () => void sendCommand(dataset, button.dataset.command));
  }
  byId('datasets').append(element);
  drawChart(dataset);
  return dataset;
}

function field(dataset, name) {
  return dataset.element.querySelector(`[data-field="${name}"]`);
}

function setText(element, text, muted = false) {
  element.textContent = text;
  element.classList.toggle('muted', muted);
}

function formatTime(ms) {
  if (ms === null || ms === undefined) return null;
  return new Date(ms)
    .toISOString()
    .replace('T', ' ')
    .replace(/\.\d+Z$/, ' UTC');
}

function clockTime(ms) {
  const date = new Date(ms);
  const pad = (value, size = 2) => String(value).padStart(size, '0');
  return `${pad(date.getHours())}:${pad(date.getMinutes())}:${pad(date.getSeconds())}.${pad(date.getMilliseconds(), 3)}`;
}

function relative(ms) {
  const seconds = Math.round((ms - (Date.now() + page.offsetMs)) / 1000);
  const size = Math.abs(seconds);
  const text =
    size < 90 ? `${size} s` : size < 5400 ? `${Math.round(size / 60)} min` : `${(size / 3600).toFixed(1)} h`;
  if (seconds === 0) return 'now';
  return seconds > 0 ? `in ${text}` : `${text} ago`;
}

function renderDataset(dataset) {
  const info = dataset.info;
  const status = info.status;
  const badge = field(dataset, 'state');
  badge.textContent = info.state;
  badge.dataset.state = info.state;
  setText(field(dataset, 'engine'), info.engine ?? 'engine unknown', info.engine === null);
  field(dataset, 'paused').hidden = status?.paused !== true;

  setText(
    field(dataset, 'snapshot-id'),
    status?.servingSnapshotId == null ? 'none loaded' : String(status.servingSnapshotId),
    status?.servingSnapshotId == null,
  );
  renderTimes(dataset);
  setText(
    field(dataset, 'schema-id'),
    status?.schemaId == null ? '—' : String(status.schemaId),
    status?.schemaId == null,
  );
  setText(field(dataset, 'etag'), status?.etag ?? '—', status?.etag == null);
  setText(field(dataset, 'last-poll-result'), status?.lastPollResult ?? '—', status?.lastPollResult == null);
  const error =
    info.error ?? (status?.lastError ? `${status.lastError.code}: ${status.lastError.message}` : null);
  const errorField = field(dataset, 'last-error');
  setText(errorField, error ?? 'none', error === null);
  errorField.classList.toggle('error-text', error !== null);
  const counters = status?.counters;
  setText(
    field(dataset, 'counters'),
    counters
      ? `polls ${counters.polls} · swaps ${counters.swaps} · refusals ${counters.refusals} · failures ${counters.failures} · notifications ${counters.notifications}`
      : '—',
    counters === undefined,
  );
  setText(field(dataset, 'mode'), status?.snapshotsMode ?? '—', status === null);

  const running = status !== null && !['failed', 'restarting', 'starting', 'stopped'].includes(info.state);
  for (const button of dataset.element.querySelectorAll('button[data-command]')) {
    const command = button.dataset.command;
    button.disabled =
      !running ||
      dataset.pending === true ||
      (command === 'polling.pause' && status.paused) ||
      (command === 'polling.resume' && !status.paused);
  }
  highlightChart(dataset);
}

/** The fields that show times relative to now (refreshed every second). */
function renderTimes(dataset) {
  const status = dataset.info?.status;
  const snapshotTime = formatTime(status?.servingTimestampMs);
  setText(field(dataset, 'snapshot-time'), snapshotTime ?? '—', snapshotTime === null);
  const lastPoll = status?.lastPollAtMs;
  setText(
    field(dataset, 'last-poll-time'),
    lastPoll == null ? 'never' : `${formatTime(lastPoll)} (${relative(lastPoll)})`,
    lastPoll == null,
  );
  let next = '—';
  if (status?.paused) next = 'paused';
  else if (status?.nextPollDueMs != null) next = relative(status.nextPollDueMs);
  else if (dataset.info && ['polling', 'bootstrapping', 'swapping'].includes(dataset.info.state))
    next = 'checking now';
  setText(field(dataset, 'next-poll'), next, next === '—');
}

function renderHistory(dataset) {
  const list = dataset.element.querySelector('.history-list');
  list.replaceChildren(
    ...dataset.history.map((entry) => {
      const item = document.createElement('li');
      item.dataset.state = entry.state;
      const name = document.createElement('span');
      name.className = 'history-state';
      name.textContent = entry.state;
      const time = document.createElement('time');
      time.textContent = clockTime(entry.atMs - page.offsetMs);
      item.append(name, time);
      return item;
    }),
  );
}

function renderLog(dataset) {
  const list = dataset.element.querySelector('.log-list');
  const items = [];
  for (let index = dataset.log.length - 1; index >= 0; index--) {
    const entry = dataset.log[index];
    const item = document.createElement('li');
    item.dataset.kind = entry.kind;
    const time = document.createElement('time');
    time.textContent = clockTime(entry.atMs - page.offsetMs);
    const kind = document.createElement('span');
    kind.className = 'kind';
    kind.textContent = entry.kind;
    const text = document.createElement('span');
    text.className = 'text';
    text.textContent = entry.text;
    item.append(time, kind, text);
    items.push(item);
  }
  list.replaceChildren(...items);
}

function renderSummary() {
  const infos = [...page.datasets.values()].map((dataset) => dataset.info).filter(Boolean);
  const ready = infos.filter((info) => info.ready).length;
  byId('summary').textContent = `${infos.length} dataset${infos.length === 1 ? '' : 's'} · ${ready} serving`;
}

// ---------------------------------------------------------------------------------------------
// The statechart: top-level states in definition order as boxes on one row; a transition to a
// state further right arcs above the row, one to a state further left arcs below, so arrows
// never cross a box and their direction reads at a glance.
// ---------------------------------------------------------------------------------------------

const BOX_W = 118;
const BOX_H = 46;
const GAP = 46;
const PAD = 14;

function svgElement(name, attributes = {}, text) {
  const element = document.createElementNS(SVG, name);
  for (const [key, value] of Object.entries(attributes)) element.setAttribute(key, String(value));
  if (text !== undefined) element.textContent = text;
  return element;
}

function arcHeight(span) {
  return 20 + 28 * span;
}

/** `readMetadata done` + `readMetadata failed` read as `readMetadata done/failed`. */
function mergeOutcomes(labels) {
  const merged = new Map();
  for (const label of labels) {
    const match = /^(\S+) (done|failed)$/.exec(label);
    const key = match === null ? label : match[1];
    const outcomes = merged.get(key) ?? [];
    if (match !== null) outcomes.push(match[2]);
    merged.set(key, outcomes);
  }
  return [...merged].map(([key, outcomes]) => (outcomes.length === 0 ? key : `${key} ${outcomes.join('/')}`));
}

function edgeLabel(triggers) {
  const labels = mergeOutcomes([...new Set(triggers.map((trigger) => trigger.label))]);
  const full = labels.join(' · ');
  if (full.length <= 26 || labels.length <= 1) return full;
  return `${labels.slice(0, 2).join(' · ')}${labels.length > 2 ? ` +${labels.length - 2}` : ''}`;
}

function drawChart(dataset) {
  const machine = page.machine;
  const svg = dataset.element.querySelector('svg.statechart');
  svg.replaceChildren();
  if (machine === null) return;
  const index = new Map(machine.states.map((state, position) => [state.key, position]));
  const spanOf = (edge) => Math.abs((index.get(edge.to) ?? 0) - (index.get(edge.from) ?? 0));
  const forward = machine.edges.filter((edge) => (index.get(edge.to) ?? 0) > (index.get(edge.from) ?? 0));
  const backward = machine.edges.filter((edge) => (index.get(edge.to) ?? 0) < (index.get(edge.from) ?? 0));
  const maxAbove = Math.max(0, ...forward.map(spanOf));
  const maxBelow = Math.max(0, ...backward.map(spanOf));
  const top = PAD + 16 + (maxAbove === 0 ? 0 : 0.75 * arcHeight(maxAbove));
  const bottom = top + BOX_H;
  const height = bottom + PAD + 22 + (maxBelow === 0 ? 0 : 0.75 * arcHeight(maxBelow));
  const width = PAD * 2 + machine.states.length * BOX_W + (machine.states.length - 1) * GAP;
  svg.setAttribute('viewBox', `0 0 ${width} ${Math.ceil(height)}`);
  const centerX = (position) => PAD + position * (BOX_W + GAP) + BOX_W / 2;

  const defs = svgElement('defs');
  for (const [id, className] of [
    ['arrow', 'arrow-head'],
    ['arrow-taken', 'arrow-head taken'],
  ]) {
    const marker = svgElement('marker', {
      id: `${id}-${dataset.id}`,
      viewBox: '0 0 10 10',
      refX: 9,
      refY: 5,
      markerWidth: 7,
      markerHeight: 7,
      orient: 'auto-start-reverse',
    });
    marker.append(svgElement('path', { d: 'M0,0 L10,5 L0,10 z', class: className }));
    defs.append(marker);
  }
  svg.append(defs);

  const edges = new Map();
  const labels = svgElement('g', { class: 'labels' });
  for (const edge of machine.edges) {
    const from = index.get(edge.from);
    const to = index.get(edge.to);
    if (from === undefined || to === undefined) continue;
    const span = Math.abs(to - from);
    const above = to > from;
    const nest = 9 * (span - 1);
    const x1 = centerX(from) + (above ? 30 - nest : -30 + nest);
    const x2 = centerX(to) + (above ? -30 + nest : 30 - nest);
    const y = above ? top : bottom;
    const bend = above ? -arcHeight(span) : arcHeight(span);
    const path = svgElement('path', {
      d: `M${x1},${y} C${x1},${y + bend} ${x2},${y + bend} ${x2},${y}`,
      class: 'edge',
      'marker-end': `url(#arrow-${dataset.id})`,
    });
    const title = edge.triggers
      .map((trigger) =>
        trigger.from ? `${trigger.event} (from ${edge.from}.${trigger.from})` : trigger.event,
      )
      .join('\n');
    path.append(svgElement('title', {}, `${edge.from} → ${edge.to}\n${title}`));
    svg.append(path);
    const labelY = y + 0.75 * bend + (above ? -5 : 12);
    const label = svgElement(
      'text',
      { x: (x1 + x2) / 2, y: labelY, class: 'edge-label' },
      edgeLabel(edge.triggers),
    );
    label.append(svgElement('title', {}, title));
    labels.append(label);
    edges.set(`${edge.from}->${edge.to}`, path);
  }

  const boxes = new Map();
  for (const [position, state] of machine.states.entries()) {
    const x = PAD + position * (BOX_W + GAP);
    const group = svgElement('g', { class: `state${state.final ? ' final' : ''}`, 'data-state': state.key });
    group.append(svgElement('rect', { x, y: top, width: BOX_W, height: BOX_H, rx: 9 }));
    group.append(svgElement('text', { x: x + BOX_W / 2, y: top + 20, class: 'state-name' }, state.key));
    const sub = svgElement('text', { x: x + BOX_W / 2, y: top + 36, class: 'state-sub' }, '');
    group.append(sub);
    if (state.substates.length > 0) {
      group.append(svgElement('title', {}, `${state.key}: ${state.substates.join(', ')}`));
    }
    svg.append(group);
    boxes.set(state.key, { group, sub });
  }
  svg.append(labels);
  for (const global of machine.global) {
    const position = index.get(global.to);
    if (position === undefined) continue;
    svg.append(
      svgElement(
        'text',
        { x: centerX(position), y: bottom + 16, class: 'global-note' },
        `${global.event}: from any state`,
      ),
    );
  }
  dataset.chart = { boxes, edges };
  if (dataset.info !== null) highlightChart(dataset);
}

function highlightChart(dataset) {
  const chart = dataset.chart;
  if (chart === null || dataset.info === null) return;
  const current = dataset.info.state;
  const substate = substateOf(dataset.value);
  for (const [key, box] of chart.boxes) {
    const active = key === current;
    box.group.classList.toggle('current', active);
    box.sub.textContent = active && substate !== null ? substate : '';
  }
  const taken = dataset.lastEdge === null ? '' : `${dataset.lastEdge[0]}->${dataset.lastEdge[1]}`;
  for (const [key, path] of chart.edges) {
    const isTaken = key === taken;
    path.classList.toggle('taken', isTaken);
    path.setAttribute('marker-end', `url(#${isTaken ? 'arrow-taken' : 'arrow'}-${dataset.id})`);
  }
}

// ---------------------------------------------------------------------------------------------
// Commands
// ---------------------------------------------------------------------------------------------

async function sendCommand(dataset, command) {
  const result = field(dataset, 'command-result');
  dataset.pending = true;
  renderDataset(dataset);
  try {
    const response = await fetch(`/inspector/datasets/${encodeURIComponent(dataset.name)}/commands`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...authHeaders() },
      body: JSON.stringify({ command }),
    });
    if (response.status === 401) showKeyForm(true);
    const body = await response.json().catch(() => ({}));
    result.dataset.outcome = response.ok ? 'ok' : 'error';
    result.textContent = response.ok
      ? `${command} accepted`
      : `${command} failed: ${body.error ?? response.status}`;
  } catch (error) {
    result.dataset.outcome = 'error';
    result.textContent = `${command} failed: ${error instanceof Error ? error.message : String(error)}`;
  } finally {
    dataset.pending = false;
    renderDataset(dataset);
  }
}

// ---------------------------------------------------------------------------------------------
// Start
// ---------------------------------------------------------------------------------------------

captureKeyFromUrl();
byId('key-form').addEventListener('submit', (event) => {
  event.preventDefault();
  const input = /** @type {HTMLInputElement} */ (byId('key-input'));
  sessionStorage.setItem(KEY_STORAGE, input.value);
  input.value = '';
  showKeyForm(false);
  page.retryAttempt = 0;
  connect();
});
window.setInterval(() => {
  for (const dataset of page.datasets.values()) if (dataset.info !== null) renderTimes(dataset);
}, 1_000);
connect();
