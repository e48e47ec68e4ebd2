/**
 * What a query worker loads. Each worker thread is its own V8 isolate and loads its modules again,
 * so a module it does not use is start-up CPU for nothing: DuckDB's node-api costs a SQLite query
 * worker ~0.5 s (bench/RESULTS.md, "What a runtime start costs"). DuckDB's packages are CommonJS, so
 * a thread's `require.cache` shows whether it loaded them.
 */
import { Worker } from 'node:worker_threads';
import { describe, expect, it } from 'vitest';

/** The CommonJS modules a fresh worker holds after running `steps` (ES module code, awaited). */
async function loadedAfter(steps: string): Promise<string[]> {
  const code = `
    const { parentPort } = require('node:worker_threads');
    (async () => {
      ${steps}
    })().then(
      () => parentPort.postMessage({ loaded: Object.keys(require.cache) }),
      (error) => parentPort.postMessage({ error: String(error && error.stack || error) }),
    );`;
  const worker = new Worker(code, { eval: true });
  try {
    const answer = await new Promise<{ loaded?: string[]; error?: string }>((resolve, reject) => {
      worker.once('message', resolve);
      worker.once('error', reject);
    });
    if (answer.error !== undefined) throw new Error(answer.error);
    return answer.loaded ?? [];
  } finally {
    await worker.terminate();
  }
}

const SQLITE_THREAD = new URL('../dist/query/sqlite-thread.js', import.meta.url).href;
const DATE_JSON = new URL('./helpers/date-json.mjs', import.meta.url).href;
const duckDb = (loaded: readonly string[]) => loaded.filter((path) => path.includes('@duckdb'));

describe('query worker modules', () => {
  it('a SQLite query worker loads none of DuckDB until a result has a DATE column to print as DuckDB does', {
    timeout: 60_000,
  }, async () => {
    // The worker's entry refuses to run without the pool's data, after its modules have loaded.
    const entry = await loadedAfter(`await import(${JSON.stringify(SQLITE_THREAD)}).catch(() => {});`);
    expect(entry.some((path) => path.includes('better-sqlite3'))).toBe(true);
    expect(duckDb(entry)).toEqual([]);

    // The control: a DATE column written as JSON loads DuckDB's value classes, and shows in the cache.
    const dated = await loadedAfter(`
      const { dateJson } = await import(${JSON.stringify(DATE_JSON)});
      const text = dateJson();
      if (text !== '{"d":"2022-01-08"}') throw new Error('unexpected JSON: ' + text);`);
    expect(duckDb(dated).some((path) => path.includes('node-api'))).toBe(true);
  });
});
