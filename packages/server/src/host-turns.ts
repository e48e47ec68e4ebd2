/**
 * Host time for queries, shared fairly with everything else the event loop does. Handling a query
 * request (routing, its body, starting its query or refusing it) and turning each result batch into
 * its answer's bytes (JSON, CSV, JSON Lines, an Arrow message) is synchronous work on the host
 * thread, up to a few milliseconds each; 2 000 requests arriving at once, or hundreds of answers in
 * flight, would otherwise run back to back, and a probe (`/health`, `/v1/ready`) or a new
 * connection would wait behind all of them (B15 measured `/health` at p99 10 s under 2 000 heavy
 * queries). Each such unit of work therefore waits for {@link hostTurn}: turns are given in arrival
 * order from a `setImmediate` callback, that is once the loop has polled for I/O, a few at a time.
 * A unit's work runs after the callback (its continuation is a microtask, its body's events
 * ticks), so how many turns one callback gives is adapted from how long the last ones took: fewer
 * when the time from one callback to the next passed {@link SLICE_MS}, one more when it did not.
 * So between two polls for I/O, queries take about one slice of the host's time.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';

/** Host time queries may take between two polls for I/O (ms). */
export const SLICE_MS = 10;
/** Most turns one callback gives. */
const MAX_TURNS = 64;
/**
 * Fewest turns one callback gives: when cores are short a loop iteration takes longer than the
 * slice whatever it does, and one turn an iteration would then leave a burst's refusals seconds
 * behind (B15 at load 18: 429s at p50 19 s).
 */
const MIN_TURNS = 4;

const waiting: (() => void)[] = [];
let scheduled = false;
let turns = 8;
/** When the last callback ran and how many turns it gave (0: none since the queue emptied). */
let lastGrant = 0;
let lastGiven = 0;

/** Resolves when the caller may take the host for one unit of work (do it at once then). */
export function hostTurn(): Promise<void> {
  return new Promise((resolve) => {
    waiting.push(resolve);
    if (!scheduled) {
      scheduled = true;
      setImmediate(grant);
    }
  });
}

function grant(): void {
  scheduled = false;
  const now = performance.now();
  if (lastGiven > 0) {
    // The last callback's turns, and the poll for I/O since, took this long.
    turns = now - lastGrant > SLICE_MS ? Math.max(MIN_TURNS, turns >> 1) : Math.min(MAX_TURNS, turns + 1);
  }
  const given = Math.min(turns, waiting.length);
  for (const resolve of waiting.splice(0, given)) resolve();
  lastGrant = now;
  lastGiven = waiting.length > 0 ? given : 0;
  if (waiting.length > 0) {
    scheduled = true;
    setImmediate(grant);
  }
}

/**
 * `handler` with query requests (`POST /v1/sql`) handled in host turns, every other request at once:
 * a probe is answered in the first poll after it arrives, whatever burst of queries came before it.
 */
export function queriesTakeTurns(
  handler: (req: IncomingMessage, res: ServerResponse) => void,
): (req: IncomingMessage, res: ServerResponse) => void {
  return (req, res) => {
    const url = req.url ?? '';
    if (req.method === 'POST' && (url === '/v1/sql' || url.startsWith('/v1/sql?'))) {
      void hostTurn().then(() => handler(req, res));
    } else handler(req, res);
  };
}
