/**
 * better-sqlite3's objects (Database, Statement, iterator) dropped by JS and collected by V8 must
 * never abort the process. On Node 24 `node::ObjectWrap`'s destructor removes an environment
 * cleanup hook and aborts (`Assertion failed: (env) != nullptr` in
 * `node::RemoveEnvironmentCleanupHook`, from `Database::~Database()`) when V8 finishes a garbage
 * collection from a platform task, outside any JS context: unpatched better-sqlite3 12.9.0 aborted
 * `pnpm test:unit` on Node 24, and the loop below aborts it within a second, every run.
 * `patches/better-sqlite3@12.9.0.patch` (src/util/env-safe-object-wrap.cpp) deletes such a
 * wrapper later, once the thread is back inside Node. On Node 20 and 22 the loop passes with or
 * without the patch (their ObjectWrap has no hook), so CI runs this file on Node 24 too.
 *
 * The second half checks what the patch's deferral must not cost: every dropped connection is
 * closed in the end (no descriptor left on its file), and a worker thread's connections are
 * closed when the thread ends (the addon's cleanup hook), as the SQLite read pool relies on.
 * Each loop runs in a child process, so a regression shows as that child's abort.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { runNodeChild } from './node-child.js';

const engines = fileURLToPath(new URL('../../packages/engines/package.json', import.meta.url));
const betterSqlite3 = createRequire(engines).resolve('better-sqlite3');
const ROUNDS = 100;

let dir: string;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'ferry-sqlite-collection-'));
});

afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

/** Counts this process's descriptors open on `file` (Linux). */
const HELD = `
function held(file) {
  const fs = require('node:fs');
  let n = 0;
  for (const fd of fs.readdirSync('/proc/self/fd')) {
    try { if (fs.readlinkSync('/proc/self/fd/' + fd) === file) n++; } catch {}
  }
  return n;
}
`;

it(`connections and statements dropped ${ROUNDS * 20} times and collected outside JS never abort the process, and all end up closed`, async () => {
  const file = join(dir, 'dropped.sqlite');
  const script = `
${HELD}
const Database = require(${JSON.stringify(betterSqlite3)});
const file = ${JSON.stringify(file)};
new Database(file).exec('CREATE TABLE t (x INTEGER); INSERT INTO t VALUES (1), (2), (3)');
// In a function of its own: a local of the async loop below could keep the last connection reachable.
function churn() {
  for (let i = 0; i < 20; i++) {
    const db = new Database(file, { readonly: true });
    const rows = db.prepare('SELECT x FROM t');
    for (const row of rows.iterate()) void row;
  }
}
(async () => {
  let garbage = [];
  for (let round = 0; round < ${ROUNDS}; round++) {
    churn();
    // Young-generation pressure, then idle turns: V8 runs the collections its tasks schedule there.
    for (let i = 0; i < 2000; i++) garbage.push({ a: new Array(100).fill(i) });
    if (garbage.length > 20000) garbage = [];
    await new Promise((resolve) => setImmediate(resolve));
    await new Promise((resolve) => setTimeout(resolve, 1));
  }
  const kept = new Database(file, { readonly: true });
  globalThis.gc();
  console.log('descriptors on the file: ' + held(file) + ', rows: ' + kept.prepare('SELECT count(*) AS n FROM t').get().n);
})();
`;
  const result = await runNodeChild(script, ['--expose-gc']);
  expect(result.out).not.toContain('Assertion failed');
  expect(result).toEqual({ code: 0, signal: null, out: 'descriptors on the file: 1, rows: 3' });
});

it("a worker thread's open connection, statement and iterator are closed when the thread ends", async () => {
  const file = join(dir, 'worker.sqlite');
  const worker = `
const Database = require(${JSON.stringify(betterSqlite3)});
const db = new Database(${JSON.stringify(file)}, { readonly: true });
const rows = db.prepare('SELECT x FROM t').iterate();
rows.next();
require('node:worker_threads').parentPort.postMessage('open');
setInterval(() => {}, 1000);
`;
  const script = `
${HELD}
const { Worker } = require('node:worker_threads');
const Database = require(${JSON.stringify(betterSqlite3)});
const file = ${JSON.stringify(file)};
const setup = new Database(file);
setup.exec('CREATE TABLE t (x INTEGER); INSERT INTO t VALUES (1), (2), (3)');
setup.close();
(async () => {
  const threads = [0, 1, 2].map(() => new Worker(${JSON.stringify(worker)}, { eval: true }));
  await Promise.all(threads.map((w) => new Promise((resolve) => w.once('message', resolve))));
  const open = held(file);
  await Promise.all(threads.map((w) => w.terminate()));
  console.log('open: ' + open + ', after the threads ended: ' + held(file));
})();
`;
  const result = await runNodeChild(script, ['--expose-gc']);
  expect(result).toEqual({ code: 0, signal: null, out: 'open: 3, after the threads ended: 0' });
});
