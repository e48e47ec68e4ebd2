/**
 * Small helpers both views share: element lookup, text setting, times (relative to the server's
 * clock, whose offset from this page's clock comes with every snapshot) and the header counts.
 */

export const clock = {
  /** Server clock minus this page's clock. */
  offsetMs: 0,
  /** Now, on the server's clock. */
  now() {
    return Date.now() + this.offsetMs;
  },
  sync(serverTimeMs) {
    this.offsetMs = serverTimeMs - Date.now();
  },
};

export const byId = (id) => /** @type {HTMLElement} */ (document.getElementById(id));

export function setText(element, text, muted = false) {
  if (element.textContent !== text) element.textContent = text;
  element.classList.toggle('muted', muted);
}

/** `2026-12-01 08:00:00 UTC`. */
export function formatTime(ms) {
  if (ms === null || ms === undefined) return null;
  return new Date(ms)
    .toISOString()
    .replace('T', ' ')
    .replace(/\.\d+Z$/, ' UTC');
}

/** `08:00:01.234` in this page's time zone, for a time on the server's clock. */
export function clockTime(ms) {
  const date = new Date(ms - clock.offsetMs);
  const pad = (value, size = 2) => String(value).padStart(size, '0');
  return `${pad(date.getHours())}:${pad(date.getMinutes())}:${pad(date.getSeconds())}.${pad(date.getMilliseconds(), 3)}`;
}

/** `4 s`, `12 min`, `3.5 h`, `2.0 d`. */
export function duration(ms) {
  const seconds = Math.round(Math.abs(ms) / 1000);
  if (seconds < 90) return `${seconds} s`;
  if (seconds < 5400) return `${Math.round(seconds / 60)} min`;
  if (seconds < 129_600) return `${(seconds / 3600).toFixed(1)} h`;
  return `${(seconds / 86_400).toFixed(1)} d`;
}

/** `in 4 s`, `12 min ago`, `now`. */
export function relative(ms) {
  const delta = ms - clock.now();
  if (Math.abs(delta) < 500) return 'now';
  return delta > 0 ? `in ${duration(delta)}` : `${duration(delta)} ago`;
}

/** What the store comparison says, in words. */
export function syncText(row) {
  switch (row.sync) {
    case 'current':
      return 'current';
    case 'behind':
      return row.storeSnapshotId === null ? 'behind' : `behind: #${row.storeSnapshotId}`;
    case 'ahead':
      return `ahead: store #${row.storeSnapshotId}`;
    case 'empty':
      return 'store empty';
    default:
      return '—';
  }
}

const STATE_ORDER = ['failed', 'restarting', 'starting', 'waiting', 'bootstrapping', 'stopped'];

/**
 * The header line: `1000 datasets · 998 serving · 2 failed`, then any other state with datasets
 * in it, and the serving datasets whose last check went wrong.
 */
export function countsParts(counts) {
  const parts = [
    { text: `${counts.total} dataset${counts.total === 1 ? '' : 's'}`, kind: 'total' },
    { text: `${counts.serving} serving`, kind: 'serving' },
  ];
  const states = Object.keys(counts.byState).sort(
    (a, b) => (STATE_ORDER.indexOf(a) + 1 || 99) - (STATE_ORDER.indexOf(b) + 1 || 99),
  );
  for (const state of states) parts.push({ text: `${counts.byState[state]} ${state}`, kind: state });
  if (counts.warnings > 0) {
    parts.push({ text: `${counts.warnings} warning${counts.warnings === 1 ? '' : 's'}`, kind: 'warn' });
  }
  if (counts.paused > 0) parts.push({ text: `${counts.paused} paused`, kind: 'paused' });
  return parts;
}

export function renderCounts(counts) {
  const element = byId('counts');
  const parts = countsParts(counts);
  element.replaceChildren(
    ...parts.map((part, index) => {
      const span = document.createElement('span');
      span.dataset.kind = part.kind;
      span.textContent = index === 0 ? part.text : ` · ${part.text}`;
      return span;
    }),
  );
  element.dataset.total = String(counts.total);
  element.dataset.serving = String(counts.serving);
}
