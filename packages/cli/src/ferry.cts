#!/usr/bin/env node
/**
 * The `ferry` executable. CommonJS, so that it runs before anything starts libuv's threadpool:
 * Node reads `UV_THREADPOOL_SIZE` once, when the pool's first task arrives, and its ES module
 * loader queues file reads there before an ES entry module's first line runs.
 *
 * Every DuckDB call runs on a thread of that pool (4 by default) and holds it while DuckDB
 * executes, so four long analytic statements used to leave every other DuckDB query, and the
 * process's file writes, waiting for one to end (bench/RESULTS.md). The CLI gives the pool
 * {@link THREADPOOL_SIZE} threads unless the environment names a size; then it runs `main.js` in
 * this process (same pid: a supervisor's signals reach it).
 */

/** Threads in libuv's pool when the environment sets none: one per long statement it can outlast. */
const THREADPOOL_SIZE = 64;

process.env.UV_THREADPOOL_SIZE ||= String(THREADPOOL_SIZE);
void import('./main.js');
