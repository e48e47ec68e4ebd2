/**
 * The page's link to the server: one EventSource at a time (the overview's or one dataset's), and
 * the session behind an API key. The key is never put in a URL: the sign-in form sends it once as
 * a header to POST /inspector/session, whose answer sets an HttpOnly session cookie that the event
 * stream, the state and the commands accept; the page renews it while open. Every (re)connection
 * starts with a full snapshot, so a page that lost the server resyncs when it is back: EventSource
 * reconnects by itself, and when the browser gives up (a 401, a 404, a restart) the page finds out
 * why and reconnects with a backoff, asks for the key, or says the dataset does not exist. A tab
 * in the background closes its stream and reopens it when shown.
 */
import { byId, clock } from './format.js';

const RETRY_DELAYS_MS = [1_000, 2_000, 5_000, 10_000];

const state = {
  /** @type {EventSource | null} */ source: null,
  /** @type {{ url: string, handlers: Record<string, (data: any) => void>, onMissing: () => void } | null} */
  target: null,
  retryAttempt: 0,
  /** @type {number | undefined} */ retryTimer: undefined,
  /** @type {number | undefined} */ renewTimer: undefined,
  /** Whether the server wants a key (known after the first session answer). */
  keyRequired: false,
  /** Whether the session was checked once (on the first connection). */
  checked: false,
};

function setConnection(status, text) {
  const element = byId('connection');
  element.dataset.connection = status;
  element.textContent = text;
}

function showKeyForm(show, error = '') {
  byId('key-form').hidden = !show;
  byId('key-error').textContent = error;
  if (show) /** @type {HTMLInputElement} */ (byId('key-input')).focus();
}

/**
 * Opens the event stream at `url`, calling `handlers[event]` with each event's parsed data, and
 * `onMissing` when the server says the stream's dataset does not exist.
 */
export function connect(url, handlers, onMissing) {
  state.target = { url, handlers, onMissing };
  state.retryAttempt = 0;
  if (state.checked) {
    open();
    return;
  }
  // The page was served saying whether it may read: with no key needed or a session it reads at
  // once (the session's renewal is scheduled on the side); without, it asks for the key.
  state.checked = true;
  const auth = document.body.dataset.auth;
  if (auth === 'required') {
    setConnection('unauthorized', 'API key required');
    showKeyForm(true);
    return;
  }
  open();
  if (auth === 'session') void renew();
}

export function disconnect() {
  clearTimeout(state.retryTimer);
  state.source?.close();
  state.source = null;
  state.target = null;
}

function open() {
  clearTimeout(state.retryTimer);
  state.source?.close();
  state.source = null;
  const target = state.target;
  if (target === null) return;
  // A tab in the background holds no stream: over HTTP/1.1 a browser keeps six connections per
  // server for all its tabs, so six open inspector tabs would leave none for a command or a page.
  if (document.hidden) {
    setConnection('hidden', 'paused while hidden');
    return;
  }
  const source = new EventSource(target.url);
  state.source = source;
  setConnection('connecting', 'connecting…');
  source.addEventListener('open', () => {
    state.retryAttempt = 0;
    setConnection('live', 'live');
  });
  for (const [event, handler] of Object.entries(target.handlers)) {
    source.addEventListener(event, (message) =>
      handler(JSON.parse(/** @type {MessageEvent} */ (message).data)),
    );
  }
  source.addEventListener('error', () => {
    if (source !== state.source) return;
    if (source.readyState === EventSource.CLOSED) {
      setConnection('offline', 'disconnected');
      void recover(target);
    } else {
      setConnection('reconnecting', 'reconnecting…');
    }
  });
}

/** Asks the server whether this page may read (a key required and no session: the form shows). */
async function checkSession() {
  const response = await fetch('/inspector/session', { method: 'POST', cache: 'no-store' });
  const answer = await response.json();
  if (answer.required === true && answer.authenticated !== true) {
    byId('sign-out').hidden = true;
    setConnection('unauthorized', 'API key required');
    showKeyForm(true);
    return false;
  }
  sessionStarted(answer);
  return true;
}

/** After the browser gave up on the stream: why? */
async function recover(target) {
  try {
    if (!(await checkSession())) return;
    const check = await fetch(target.url.replace('/inspector/events', '/inspector/state'), {
      cache: 'no-store',
    });
    if (check.status === 404) {
      setConnection('offline', 'not found');
      target.onMissing();
      return;
    }
  } catch {
    // The server is down: retry below.
  }
  if (state.target !== target) return;
  const delay = RETRY_DELAYS_MS[Math.min(state.retryAttempt, RETRY_DELAYS_MS.length - 1)];
  state.retryAttempt++;
  state.retryTimer = window.setTimeout(open, delay);
}

/** Remembers what the server said about the session, and renews it halfway to its expiry. */
function sessionStarted(answer) {
  state.keyRequired = answer.required === true;
  byId('sign-out').hidden = !state.keyRequired;
  clearTimeout(state.renewTimer);
  if (!state.keyRequired) return;
  clock.sync(answer.serverTimeMs);
  const left = answer.expiresAtMs - answer.serverTimeMs;
  state.renewTimer = window.setTimeout(renew, Math.max(5_000, left / 2));
}

async function renew() {
  try {
    const answer = await fetch('/inspector/session', { method: 'POST', cache: 'no-store' });
    // A session past its maximum age is not renewed: the stream stays until it breaks, then the key is asked for.
    if (answer.ok) {
      const body = await answer.json();
      if (body.authenticated === true) sessionStarted(body);
    }
  } catch {
    state.renewTimer = window.setTimeout(renew, 10_000);
  }
}

async function signIn(key) {
  const answer = await fetch('/inspector/session', {
    method: 'POST',
    headers: { authorization: `Bearer ${key}` },
    cache: 'no-store',
  });
  if (answer.status === 401) {
    showKeyForm(true, 'That key was not accepted.');
    return;
  }
  if (!answer.ok) {
    showKeyForm(true, `The server answered ${answer.status}.`);
    return;
  }
  sessionStarted(await answer.json());
  showKeyForm(false);
  state.retryAttempt = 0;
  open();
}

async function signOut() {
  clearTimeout(state.renewTimer);
  await fetch('/inspector/session', { method: 'DELETE', cache: 'no-store' }).catch(() => undefined);
  state.source?.close();
  state.source = null;
  byId('sign-out').hidden = true;
  setConnection('unauthorized', 'signed out');
  showKeyForm(true);
}

/** POSTs a command; the session cookie goes along. Resolves with `{ ok, text }`. */
export async function postCommand(dataset, command) {
  try {
    const response = await fetch(`/inspector/datasets/${encodeURIComponent(dataset)}/commands`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ command }),
    });
    if (response.status === 401) showKeyForm(true);
    const body = await response.json().catch(() => ({}));
    return response.ok
      ? { ok: true, text: `${command} accepted` }
      : { ok: false, text: `${command} failed: ${body.error ?? response.status}` };
  } catch (error) {
    return {
      ok: false,
      text: `${command} failed: ${error instanceof Error ? error.message : String(error)}`,
    };
  }
}

export function startConnection() {
  byId('key-form').addEventListener('submit', (event) => {
    event.preventDefault();
    const input = /** @type {HTMLInputElement} */ (byId('key-input'));
    const key = input.value;
    input.value = '';
    void signIn(key);
  });
  byId('sign-out').addEventListener('click', () => void signOut());
  // Hidden: the stream is closed (see open()); shown again: reopened, starting from a snapshot.
  document.addEventListener('visibilitychange', () => {
    if (document.hidden) {
      if (state.source !== null) open();
    } else if (state.source === null && state.target !== null && byId('key-form').hidden) {
      state.retryAttempt = 0;
      open();
    }
  });
}
