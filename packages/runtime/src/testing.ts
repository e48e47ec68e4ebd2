/**
 * `@ferry/runtime/testing`: hooks for tests and benchmarks, kept out of the public `Runtime`
 * interface — crash drills of a dataset thread and of the coordinator thread, the coordinator's
 * count of metadata.json reads, and the queries the pools still run.
 */
import type { Runtime } from './api.js';
import {
  type RuntimeTestHooks,
  TEST_HOOKS,
  type ThreadYoungGeneration,
  type WithTestHooks,
} from './common/test-hooks.js';

export type { RuntimeTestHooks, ThreadYoungGeneration };

function hooksOf(runtime: Runtime): RuntimeTestHooks {
  const hooks = (runtime as Partial<WithTestHooks>)[TEST_HOOKS];
  if (hooks === undefined) {
    throw new TypeError('This runtime has no test hooks; pass a runtime made by createRuntime().');
  }
  return hooks;
}

/** Ends a dataset's thread with an uncaught error, as a bug would; the coordinator restarts it. */
export function terminateDatasetThread(runtime: Runtime, name: string): Promise<void> {
  return hooksOf(runtime).terminateDatasetThread(name);
}

/**
 * Ends a dataset's thread at once, as its heap limit would: none of its own code runs (the crash
 * drill above waits up to 10 s for the thread's work first). The coordinator restarts it.
 */
export function killDatasetThread(runtime: Runtime, name: string): Promise<void> {
  return hooksOf(runtime).killDatasetThread(name);
}

/** Ends the coordinator thread, as a crash would; the runtime restarts it (and every dataset thread). */
export function terminateCoordinatorThread(runtime: Runtime): Promise<void> {
  return hooksOf(runtime).terminateCoordinatorThread();
}

/** Queries the runtime's query pools have not answered yet (a cancelled one until its engine stopped). */
export function queriesInFlight(runtime: Runtime): number {
  return hooksOf(runtime).queriesInFlight();
}

/**
 * Statements the runtime handed to each engine's query pool so far: a statement the DuckDB worker
 * re-routed to SQLite counts for both; an answer from the results cache for neither.
 */
export function queriesSent(runtime: Runtime): { readonly duckdb: number; readonly sqlite: number } {
  return hooksOf(runtime).queriesSent();
}

/** Queries the runtime admitted and has not finished (an open stream counts), and those it refused so far. */
export function queryAdmission(runtime: Runtime): { readonly inFlight: number; readonly rejected: number } {
  return hooksOf(runtime).admission();
}

/** How many GETs of metadata.json the runtime's coordinator has made so far. */
export function metadataGets(runtime: Runtime): Promise<number> {
  return hooksOf(runtime).metadataGets();
}

/** The V8 young generation (MiB) of each thread the coordinator runs now: itself, dataset threads, snapshot workers. */
export function threadYoungGenerations(runtime: Runtime): Promise<readonly ThreadYoungGeneration[]> {
  return hooksOf(runtime).threadYoungGenerations();
}
