/**
 * The overview: one row per dataset in a table that renders only the rows on screen (a pool of
 * row elements moved and refilled as the list scrolls), so a thousand datasets cost the DOM what
 * forty do. Rows come as a full `overview` snapshot and then as batches of changed rows; a change
 * refills the cells of that row if it is on screen and nothing else. Filter by state, search by
 * name, sort (failures first by default); the choice is kept in the URL's query so it can be linked.
 */
import { byId, clock, duration, relative, renderCounts, setText, syncText } from './format.js';

/** Must match `.row` height in inspector.css. */
const ROW_HEIGHT = 30;
const OVERSCAN = 6;
const HEALTH_RANK = { error: 0, warn: 1, pending: 2, stopped: 3, ok: 4 };

const model = {
  /** @type {Map<string, { row: any, version: number }>} */ rows: new Map(),
  /** Names in display order, after the filter and the search. @type {string[]} */ order: [],
  filter: 'all',
  query: '',
  sort: 'attention',
  /** @type {any} */ counts: null,
  /** Row elements on screen, reused. @type {HTMLAnchorElement[]} */ pool: [],
  orderStale: true,
  frame: 0,
  /** @type {(path: string) => void} */ navigate: () => undefined,
  started: false,
};

const byName = (a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0);
const nullsFirst = (a, b) => (a === null ? (b === null ? 0 : -1) : b === null ? 1 : a - b);

const COMPARATORS = {
  attention: (a, b) => HEALTH_RANK[a.health] - HEALTH_RANK[b.health] || byName(a, b),
  name: byName,
  state: (a, b) => (a.state < b.state ? -1 : a.state > b.state ? 1 : byName(a, b)),
  age: (a, b) => nullsFirst(a.snapshotAtMs, b.snapshotAtMs) || byName(a, b),
  lag: (a, b) => nullsFirst(a.freshSinceMs, b.freshSinceMs) || byName(a, b),
  checked: (a, b) => nullsFirst(a.lastPollAtMs, b.lastPollAtMs) || byName(a, b),
  failures: (a, b) => b.failures + b.refusals - (a.failures + a.refusals) || byName(a, b),
};

function matchesFilter(row) {
  switch (model.filter) {
    case 'all':
      return true;
    case 'attention':
      return row.health === 'error' || row.health === 'warn';
    case 'serving':
      return row.ready;
    case 'paused':
      return row.paused;
    default:
      return !row.ready && row.state === model.filter;
  }
}

function recomputeOrder() {
  const query = model.query.toLowerCase();
  const rows = [];
  for (const { row } of model.rows.values()) {
    if (!matchesFilter(row)) continue;
    if (query !== '' && !row.name.toLowerCase().includes(query)) continue;
    rows.push(row);
  }
  rows.sort(COMPARATORS[model.sort] ?? COMPARATORS.attention);
  model.order = rows.map((row) => row.name);
  model.orderStale = false;
}

// ---------------------------------------------------------------------------------------------
// Rows
// ---------------------------------------------------------------------------------------------

const CELLS = [
  'name',
  'engine',
  'state',
  'snapshot',
  'age',
  'lag',
  'store',
  'checked',
  'next',
  'failures',
  'error',
];

function createRow() {
  const element = document.createElement('a');
  element.className = 'row';
  const cells = {};
  for (const name of CELLS) {
    const cell = document.createElement('span');
    cell.className = `cell-${name}`;
    cells[name] = cell;
    element.append(cell);
  }
  const badge = document.createElement('span');
  badge.className = 'state-badge';
  cells.state.append(badge);
  const paused = document.createElement('span');
  paused.className = 'paused-tag';
  paused.textContent = 'paused';
  cells.state.append(paused);
  const result = document.createElement('span');
  result.className = 'result';
  const when = document.createElement('span');
  when.className = 'when';
  cells.checked.append(result, when);
  Object.assign(element, { cells, badge, paused, result, when, shown: null, version: -1 });
  return element;
}

function fillRow(element, entry) {
  const { row } = entry;
  const cells = element.cells;
  if (element.shown !== row.name) {
    element.shown = row.name;
    element.href = `/inspector/datasets/${encodeURIComponent(row.name)}`;
    element.dataset.name = row.name;
    cells.name.textContent = row.name;
    cells.name.title = row.name;
  }
  element.version = entry.version;
  element.dataset.health = row.health;
  setText(cells.engine, row.engine ?? '—', row.engine === null);
  element.badge.textContent = row.state;
  element.badge.dataset.state = row.state;
  element.paused.hidden = !row.paused;
  setText(cells.snapshot, row.snapshotId === null ? '—' : `#${row.snapshotId}`, row.snapshotId === null);
  setText(cells.store, syncText(row), row.sync === 'unknown');
  cells.store.dataset.sync = row.sync;
  element.result.textContent = row.lastPollResult ?? 'never';
  element.result.dataset.result = row.lastPollResult ?? 'never';
  const bad = row.failures + row.refusals > 0;
  setText(cells.failures, `${row.failures} / ${row.refusals}`, !bad);
  cells.failures.classList.toggle('bad', bad);
  setText(cells.error, row.error ?? '', row.error === null);
  cells.error.title = row.error ?? '';
  fillTimes(element, row);
}

/** The cells that show times relative to now (refreshed every second). */
function fillTimes(element, row) {
  const cells = element.cells;
  setText(
    cells.age,
    row.snapshotAtMs === null ? '—' : duration(clock.now() - row.snapshotAtMs),
    row.snapshotAtMs === null,
  );
  // Lag: staleness, the time since this reader last knew it served the store's current snapshot.
  setText(
    cells.lag,
    row.freshSinceMs === null ? '—' : duration(Math.max(0, clock.now() - row.freshSinceMs)),
    row.freshSinceMs === null,
  );
  cells.lag.title =
    row.newerSnapshotId === null ? '' : `the store has snapshot #${row.newerSnapshotId}, not loaded yet`;
  setText(element.when, row.lastPollAtMs === null ? '' : relative(row.lastPollAtMs), true);
  let next = '—';
  if (row.paused) next = 'paused';
  else if (row.nextPollDueMs !== null) next = relative(row.nextPollDueMs);
  else if (['polling', 'bootstrapping', 'swapping'].includes(row.state)) next = 'checking';
  setText(cells.next, next, next === '—');
}

// ---------------------------------------------------------------------------------------------
// Rendering
// ---------------------------------------------------------------------------------------------

function scheduleRender() {
  if (model.frame !== 0) return;
  model.frame = requestAnimationFrame(() => {
    model.frame = 0;
    render();
  });
}

function render() {
  if (byId('overview').hidden) return;
  if (model.orderStale) recomputeOrder();
  const viewport = byId('viewport');
  const spacer = byId('spacer');
  const total = model.order.length;
  spacer.style.height = `${total * ROW_HEIGHT}px`;
  const first = Math.max(0, Math.floor(viewport.scrollTop / ROW_HEIGHT) - OVERSCAN);
  const wanted = Math.ceil((viewport.clientHeight || window.innerHeight) / ROW_HEIGHT) + 2 * OVERSCAN;
  const last = Math.min(total, first + wanted);
  while (model.pool.length < last - first) {
    const element = createRow();
    model.pool.push(element);
    spacer.append(element);
  }
  while (model.pool.length > last - first) model.pool.pop()?.remove();
  for (let index = first; index < last; index++) {
    const element = model.pool[index - first];
    const entry = model.rows.get(model.order[index]);
    if (element === undefined || entry === undefined) continue;
    element.style.transform = `translateY(${index * ROW_HEIGHT}px)`;
    if (element.shown !== entry.row.name || element.version !== entry.version) fillRow(element, entry);
  }
  const overview = byId('overview');
  overview.dataset.total = String(model.rows.size);
  overview.dataset.shown = String(total);
  byId('shown').textContent =
    total === model.rows.size ? `${total} shown` : `${total} of ${model.rows.size} shown`;
  const empty = byId('overview-empty');
  empty.hidden = total > 0;
  empty.textContent =
    model.rows.size === 0 ? 'No datasets are configured.' : 'No dataset matches this filter and search.';
}

function renderChips() {
  const counts = model.counts;
  if (counts === null) return;
  const chips = [
    ['all', 'All', counts.total],
    ['attention', 'Needs attention', counts.attention],
    ['serving', 'Serving', counts.serving],
    ...Object.entries(counts.byState).map(([state, count]) => [state, state, count]),
    ...(counts.paused > 0 ? [['paused', 'Paused', counts.paused]] : []),
  ];
  if (!chips.some(([key]) => key === model.filter)) chips.push([model.filter, model.filter, 0]);
  const container = byId('chips');
  container.replaceChildren(
    ...chips.map(([key, label, count]) => {
      const button = document.createElement('button');
      button.type = 'button';
      button.className = 'chip';
      button.dataset.filter = key;
      if (key === 'attention' && count > 0) button.dataset.alert = 'true';
      button.setAttribute('aria-pressed', String(key === model.filter));
      const text = document.createElement('span');
      text.textContent = label;
      const number = document.createElement('span');
      number.className = 'chip-count';
      number.textContent = String(count);
      button.append(text, number);
      return button;
    }),
  );
}

function setCounts(counts) {
  const changed = JSON.stringify(counts) !== JSON.stringify(model.counts);
  model.counts = counts;
  if (!changed) return;
  renderCounts(counts);
  renderChips();
}

// ---------------------------------------------------------------------------------------------
// Data from the stream
// ---------------------------------------------------------------------------------------------

/** A full snapshot: every row replaced. */
export function applyOverview(snapshot) {
  clock.sync(snapshot.serverTimeMs);
  const rows = new Map();
  for (const row of snapshot.rows) {
    const previous = model.rows.get(row.name);
    rows.set(row.name, { row, version: (previous?.version ?? 0) + 1 });
  }
  model.rows = rows;
  model.orderStale = true;
  setCounts(snapshot.counts);
  scheduleRender();
}

/** A batch of changed rows. */
export function applyUpdate(update) {
  clock.sync(update.serverTimeMs);
  for (const row of update.rows) {
    const entry = model.rows.get(row.name);
    if (entry === undefined) model.rows.set(row.name, { row, version: 1 });
    else {
      entry.row = row;
      entry.version++;
    }
  }
  // Rows moved only if the sort or the filter reads what changed; re-sorting a thousand is cheap.
  model.orderStale = true;
  setCounts(update.counts);
  scheduleRender();
}

// ---------------------------------------------------------------------------------------------
// Controls
// ---------------------------------------------------------------------------------------------

/** The overview's URL with the filter, search and sort it shows now. */
export function overviewPath() {
  const params = new URLSearchParams();
  if (model.filter !== 'all') params.set('state', model.filter);
  if (model.query !== '') params.set('q', model.query);
  if (model.sort !== 'attention') params.set('sort', model.sort);
  const query = params.toString();
  return `/inspector${query === '' ? '' : `?${query}`}`;
}

function writeQuery() {
  window.history.replaceState(null, '', overviewPath());
}

function readQuery() {
  const params = new URLSearchParams(window.location.search);
  model.filter = params.get('state') ?? 'all';
  model.query = params.get('q') ?? '';
  const sort = params.get('sort') ?? 'attention';
  // Every sort there is a comparator for (the select and the column headers offer each).
  model.sort = Object.hasOwn(COMPARATORS, sort) ? sort : 'attention';
  /** @type {HTMLInputElement} */ (byId('search')).value = model.query;
  /** @type {HTMLSelectElement} */ (byId('sort')).value = model.sort;
}

function changed() {
  model.orderStale = true;
  writeQuery();
  renderChips();
  byId('viewport').scrollTop = 0;
  scheduleRender();
}

function start() {
  model.started = true;
  byId('search').addEventListener('input', (event) => {
    model.query = /** @type {HTMLInputElement} */ (event.target).value.trim();
    changed();
  });
  byId('sort').addEventListener('change', (event) => {
    model.sort = /** @type {HTMLSelectElement} */ (event.target).value;
    changed();
  });
  byId('chips').addEventListener('click', (event) => {
    const chip = /** @type {HTMLElement} */ (event.target).closest('button[data-filter]');
    if (chip === null) return;
    model.filter = chip.dataset.filter ?? 'all';
    changed();
  });
  for (const header of document.querySelectorAll('.thead [data-sort]')) {
    header.addEventListener('click', () => {
      model.sort = /** @type {HTMLElement} */ (header).dataset.sort ?? 'attention';
      /** @type {HTMLSelectElement} */ (byId('sort')).value = model.sort;
      changed();
    });
  }
  byId('viewport').addEventListener('scroll', scheduleRender, { passive: true });
  window.addEventListener('resize', scheduleRender);
  byId('viewport').addEventListener('click', (event) => {
    const mouse = /** @type {MouseEvent} */ (event);
    if (mouse.button !== 0 || mouse.metaKey || mouse.ctrlKey || mouse.shiftKey || mouse.altKey) return;
    const row = /** @type {HTMLElement} */ (event.target).closest('a.row');
    if (row === null) return;
    event.preventDefault();
    model.navigate(/** @type {HTMLAnchorElement} */ (row).pathname);
  });
  window.setInterval(() => {
    if (byId('overview').hidden) return;
    for (const element of model.pool) {
      const entry = element.shown === null ? undefined : model.rows.get(element.shown);
      if (entry !== undefined) fillTimes(element, entry.row);
    }
  }, 1_000);
}

/** Shows the overview (the stream is the caller's); `navigate` opens a dataset's detail view. */
export function showOverview(navigate) {
  model.navigate = navigate;
  if (!model.started) start();
  readQuery();
  model.orderStale = true;
  renderChips();
  if (model.counts !== null) renderCounts(model.counts);
  scheduleRender();
}
