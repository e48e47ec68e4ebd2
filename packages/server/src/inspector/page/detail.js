/**
 * The detail view of one dataset (`/inspector/datasets/<name>`): its statechart with the current
 * state and the arrow just taken, its context, its state history, an event log and the commands
 * poll now / pause / resume. It starts from a `detail` snapshot and then gets batched
 * `detail-update`s. The log merges the runtime's activity for the dataset (every check's result,
 * swaps, errors — kept by the server for every dataset) with its machine's inspection events,
 * which the server follows while this view is open: events received, every microstep (so the
 * outcome state a check passed through shows), the machine's logs, timers and invoked actors.
 */
import { drawChart, highlightChart } from './chart.js';
import { postCommand } from './connection.js';
import { byId, clock, clockTime, formatTime, relative, renderCounts, setText, syncText } from './format.js';

const MAX_LOG = 300;

const view = {
  /** @type {string | null} */ name: null,
  /** @type {any} */ machine: null,
  /** @type {any} */ chart: null,
  /** @type {any} */ row: null,
  /** @type {any} */ status: null,
  /** The full state value from the latest inspection snapshot, for the substate. */
  value: null,
  /** @type {{ state: string, atMs: number, seq: number }[]} */ history: [],
  /** @type {{ kind: string, text: string, atMs: number, seq: number }[]} */ log: [],
  /** Highest `seq` applied per list, so entries a snapshot already held are not applied twice. */
  seen: { history: 0, activity: 0, inspection: 0 },
  pending: false,
  started: false,
};

const field = (name) => /** @type {HTMLElement} */ (byId('detail').querySelector(`[data-field="${name}"]`));

// ---------------------------------------------------------------------------------------------
// The event log: what the machine received and what it did
// ---------------------------------------------------------------------------------------------

function short(value, max = 90) {
  if (value === undefined) return '';
  const text = typeof value === 'string' ? value : JSON.stringify(value);
  return text.length > max ? `${text.slice(0, max - 1)}…` : text;
}

function valueText(value) {
  if (typeof value === 'string') return value;
  if (value === null || typeof value !== 'object') return String(value);
  return Object.entries(value)
    .map(([key, inner]) => `${key}.${valueText(inner)}`)
    .join(', ');
}

function substateOf(value) {
  if (value === null || typeof value !== 'object') return null;
  const inner = Object.values(value)[0];
  return typeof inner === 'string' ? inner : null;
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
  // Emitted poll / swap / error events are in the log as the runtime's activity.
  if (type === 'xstate.emit') return null;
  if (type === 'xstate.spawnChild' && params.src === 'pollTimer' && typeof params.input?.dueMs === 'number') {
    return ['timer', `next check in ${((params.input.dueMs - atMs) / 1000).toFixed(1)} s`];
  }
  if (type === 'xstate.spawnChild') return ['invoke', `invoke ${params.src ?? params.id}`];
  if (type === 'xstate.raise' && typeof params.delay === 'number') {
    return ['timer', `next check in ${(params.delay / 1000).toFixed(1)} s`];
  }
  return null;
}

function describeInspection(event) {
  if (event.type === '@xstate.event') return describeEvent(event.event);
  if (event.type === '@xstate.action') return describeAction(event.action, event.atMs);
  if (event.type === '@xstate.snapshot') return ['state', `→ ${valueText(event.value ?? event.state)}`];
  // Each transition of a step (eventless ones too): the outcome states a check passed through.
  if (event.type === '@xstate.microstep') return ['step', `→ ${valueText(event.value ?? event.state)}`];
  if (event.type === '@xstate.actor' && event.root === true) return ['actor', `machine ${event.sessionId}`];
  return null;
}

function describeActivity(entry) {
  if (entry.kind === 'poll') {
    const current = entry.currentSnapshotId === null ? '' : ` (store current #${entry.currentSnapshotId})`;
    return ['poll', `poll result: ${entry.result}${current}`];
  }
  if (entry.kind === 'swap') return ['swap', `swapped ${entry.from ?? 'nothing'} → ${entry.to}`];
  return ['error', `${entry.code}: ${entry.message}`];
}

function addLog(seq, atMs, described) {
  if (described === null) return;
  view.log.push({ seq, atMs, kind: described[0], text: described[1] });
}

function applyActivity(entries) {
  for (const entry of entries) {
    if (entry.seq <= view.seen.activity) continue;
    view.seen.activity = entry.seq;
    addLog(entry.seq, entry.atMs, describeActivity(entry));
  }
}

function applyInspection(events) {
  for (const event of events) {
    if (event.seq <= view.seen.inspection) continue;
    view.seen.inspection = event.seq;
    if (
      (event.type === '@xstate.snapshot' || event.type === '@xstate.microstep') &&
      event.value !== undefined
    ) {
      view.value = event.value;
    }
    addLog(event.seq, event.atMs, describeInspection(event));
  }
}

function applyHistory(entries) {
  for (const entry of entries) {
    if (entry.seq <= view.seen.history) continue;
    view.seen.history = entry.seq;
    view.history.push(entry);
  }
  if (view.history.length > 60) view.history.splice(0, view.history.length - 60);
}

function trimLog() {
  // Time order; entries of one time keep the order they were made in.
  view.log.sort((a, b) => a.atMs - b.atMs || a.seq - b.seq);
  if (view.log.length > MAX_LOG) view.log.splice(0, view.log.length - MAX_LOG);
}

// ---------------------------------------------------------------------------------------------
// Rendering
// ---------------------------------------------------------------------------------------------

function lastEdge() {
  const count = view.history.length;
  if (count < 2) return null;
  return [view.history[count - 2].state, view.history[count - 1].state];
}

function render() {
  const row = view.row;
  const status = view.status;
  if (row === null) return;
  setText(field('name'), row.name);
  setText(field('engine'), row.engine ?? 'engine unknown', row.engine === null);
  const badge = field('state');
  badge.textContent = row.state;
  badge.dataset.state = row.state;
  field('paused').hidden = !row.paused;
  byId('detail').dataset.health = row.health;

  setText(
    field('snapshot-id'),
    row.snapshotId === null ? 'none loaded' : String(row.snapshotId),
    row.snapshotId === null,
  );
  setText(
    field('store'),
    row.sync === 'unknown'
      ? 'not checked yet'
      : `${syncText(row)}${row.storeSnapshotId === null ? '' : ` (store #${row.storeSnapshotId})`}`,
    row.sync === 'unknown',
  );
  field('store').dataset.sync = row.sync;
  setText(
    field('schema-id'),
    status?.schemaId == null ? '—' : String(status.schemaId),
    status?.schemaId == null,
  );
  setText(field('etag'), status?.etag ?? '—', status?.etag == null);
  setText(field('last-poll-result'), row.lastPollResult ?? '—', row.lastPollResult === null);
  const errorField = field('last-error');
  setText(errorField, row.error ?? 'none', row.error === null);
  errorField.classList.toggle('error-text', row.error !== null);
  const counters = status?.counters;
  setText(
    field('counters'),
    counters
      ? `polls ${counters.polls} · swaps ${counters.swaps} · refusals ${counters.refusals} · failures ${counters.failures} · notifications ${counters.notifications}`
      : '—',
    counters === undefined,
  );
  setText(field('mode'), status?.snapshotsMode ?? '—', status === null);
  renderTimes();
  renderButtons();
  if (view.chart !== null) {
    const substate =
      view.value !== null && Object.keys(view.value)[0] === row.state ? substateOf(view.value) : null;
    highlightChart(view.chart, row.state, substate, lastEdge());
  }
  renderHistory();
  renderLog();
}

function renderButtons() {
  const row = view.row;
  const running =
    view.status !== null && !['failed', 'restarting', 'starting', 'stopped'].includes(row.state);
  for (const button of byId('detail').querySelectorAll('button[data-command]')) {
    const command = /** @type {HTMLButtonElement} */ (button).dataset.command;
    /** @type {HTMLButtonElement} */ (button).disabled =
      !running ||
      view.pending ||
      (command === 'polling.pause' && row.paused) ||
      (command === 'polling.resume' && !row.paused);
  }
}

/** The fields that show times relative to now (refreshed every second). */
function renderTimes() {
  const row = view.row;
  if (row === null) return;
  const snapshotTime = formatTime(row.snapshotAtMs);
  setText(
    field('snapshot-time'),
    snapshotTime === null ? '—' : `${snapshotTime} (${relative(row.snapshotAtMs)})`,
    snapshotTime === null,
  );
  const lastPoll = row.lastPollAtMs;
  setText(
    field('last-poll-time'),
    lastPoll === null ? 'never' : `${formatTime(lastPoll)} (${relative(lastPoll)})`,
    lastPoll === null,
  );
  let next = '—';
  if (row.paused) next = 'paused';
  else if (row.nextPollDueMs !== null) next = relative(row.nextPollDueMs);
  else if (['polling', 'bootstrapping', 'swapping'].includes(row.state)) next = 'checking now';
  setText(field('next-poll'), next, next === '—');
}

/**
 * The history as shown: a run of checks that came back to the same state (`serving ⇄ polling`,
 * once a second at 1 s polling) is one item with its count, so the states that matter stand out.
 */
function historyItems() {
  const items = [];
  const history = view.history;
  let index = 0;
  while (index < history.length) {
    const first = history[index];
    const second = history[index + 1];
    let end = index + 1;
    if (second !== undefined) {
      while (
        end < history.length &&
        history[end].state === ((end - index) % 2 === 0 ? first.state : second.state)
      )
        end++;
    }
    const length = end - index;
    if (length >= 4) {
      items.push({
        state: first.state,
        other: second.state,
        cycles: Math.floor(length / 2),
        from: first,
        to: history[end - 1],
      });
      index = end;
    } else {
      items.push({ state: first.state, from: first });
      index++;
    }
  }
  return items;
}

function renderHistory() {
  const list = /** @type {HTMLElement} */ (byId('detail').querySelector('.history-list'));
  // Every state entered, uncollapsed, for whoever reads the page's data (tests, scripts).
  list.dataset.states = view.history.map((entry) => entry.state).join(' ');
  list.replaceChildren(
    ...historyItems().map((entry) => {
      const item = document.createElement('li');
      item.dataset.state = entry.state;
      const name = document.createElement('span');
      name.className = 'history-state';
      name.textContent = entry.state;
      item.append(name);
      if (entry.other !== undefined) {
        item.dataset.repeat = String(entry.cycles);
        const other = document.createElement('span');
        other.className = 'history-cycle';
        other.textContent = `⇄ ${entry.other} ×${entry.cycles}`;
        item.append(other);
      }
      const time = document.createElement('time');
      time.textContent =
        entry.to === undefined
          ? clockTime(entry.from.atMs)
          : `${clockTime(entry.from.atMs)} – ${clockTime(entry.to.atMs)}`;
      item.append(time);
      return item;
    }),
  );
}

function renderLog() {
  const list = /** @type {HTMLElement} */ (byId('detail').querySelector('.log-list'));
  const items = [];
  for (let index = view.log.length - 1; index >= 0; index--) {
    const entry = view.log[index];
    const item = document.createElement('li');
    item.dataset.kind = entry.kind;
    const time = document.createElement('time');
    time.textContent = clockTime(entry.atMs);
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

// ---------------------------------------------------------------------------------------------
// Data from the stream
// ---------------------------------------------------------------------------------------------

/** A full snapshot: the view starts over from it. */
export function applyDetail(snapshot) {
  clock.sync(snapshot.serverTimeMs);
  renderCounts(snapshot.counts);
  if (JSON.stringify(snapshot.machine) !== JSON.stringify(view.machine)) {
    view.machine = snapshot.machine;
    view.chart = drawChart(
      /** @type {SVGSVGElement} */ (byId('detail').querySelector('svg.statechart')),
      snapshot.machine,
    );
  }
  view.row = snapshot.row;
  view.status = snapshot.status;
  view.history = [];
  view.log = [];
  view.seen = { history: 0, activity: 0, inspection: 0 };
  applyHistory(snapshot.history);
  applyActivity(snapshot.activity);
  applyInspection(snapshot.inspection);
  trimLog();
  document.body.dataset.snapshots = String(Number(document.body.dataset.snapshots ?? 0) + 1);
  render();
}

export function applyDetailUpdate(update) {
  clock.sync(update.serverTimeMs);
  renderCounts(update.counts);
  if (update.row !== undefined) view.row = update.row;
  if (update.status !== undefined) view.status = update.status;
  applyHistory(update.history);
  applyActivity(update.activity);
  applyInspection(update.inspection);
  trimLog();
  render();
}

// ---------------------------------------------------------------------------------------------
// Commands
// ---------------------------------------------------------------------------------------------

async function sendCommand(command) {
  const name = view.name;
  if (name === null) return;
  const result = field('command-result');
  view.pending = true;
  renderButtons();
  const outcome = await postCommand(name, command);
  view.pending = false;
  if (view.name !== name) return;
  result.dataset.outcome = outcome.ok ? 'ok' : 'error';
  result.textContent = outcome.text;
  renderButtons();
}

function start() {
  view.started = true;
  for (const button of byId('detail').querySelectorAll('button[data-command]')) {
    button.addEventListener(
      'click',
      () => void sendCommand(/** @type {HTMLElement} */ (button).dataset.command),
    );
  }
  window.setInterval(() => {
    if (!byId('detail').hidden) renderTimes();
  }, 1_000);
}

/** Shows the (empty) view of `name`; the stream's snapshot fills it. */
export function showDetail(name) {
  if (!view.started) start();
  if (view.name !== name) {
    view.name = name;
    view.row = null;
    view.status = null;
    view.value = null;
    view.history = [];
    view.log = [];
    field('command-result').textContent = '';
    field('name').textContent = name;
    for (const list of byId('detail').querySelectorAll('ol')) list.replaceChildren();
  }
}
