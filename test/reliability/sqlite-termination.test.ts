/**
 * A worker thread ended while better-sqlite3 is raising an SQLite error must end alone. The SQLite
 * read pool ends the worker of a query past its timeout; unpatched better-sqlite3 12.9.0 then
 * aborts the whole process (`FATAL ERROR: v8::ToLocalChecked Empty MaybeLocal` in
 * `Database::ThrowSqliteError`, seen once in CI). `patches/better-sqlite3@12.9.0.patch` returns
 * from that function when the isolate is terminating. The loop runs in a child process, so a
 * regression shows as that child's abort, not as the test runner's.
 */
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import { expect, it } from 'vitest';
import { runNodeChild } from './node-child.js';

const engines = fileURLToPath(new URL('../../packages/engines/package.json', import.meta.url));
const betterSqlite3 = createRequire(engines).resolve('better-sqlite3');
const TERMINATIONS = 200;

const CHILD = `
const { Worker } = require('node:worker_threads');
const worker = ${JSON.stringify(`
  const Database = require(${JSON.stringify(betterSqlite3)});
  const db = new Database(':memory:');
  require('node:worker_threads').parentPort.postMessage('ready');
  for (;;) { try { db.prepare('SELECT * FROM no_such_table'); } catch {} }
`)};
(async () => {
  for (let i = 0; i < ${TERMINATIONS}; i++) {
    const w = new Worker(worker, { eval: true });
    await new Promise((resolve) => w.once('message', resolve));
    await new Promise((resolve) => setTimeout(resolve, Math.random() * 3));
    await w.terminate();
  }
  console.log('ended ${TERMINATIONS} workers');
})();
`;

it(`ending a worker while SQLite errors are being raised, ${TERMINATIONS} times, never aborts the process`, async () => {
  const { code, signal, out } = await runNodeChild(CHILD);
  expect(out).not.toContain('FATAL ERROR');
  expect({ code, signal, out }).toEqual({
    code: 0,
    signal: null,
    out: `ended ${TERMINATIONS} workers`,
  });
});
