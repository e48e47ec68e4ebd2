import type { Worker } from 'node:worker_threads';

/**
 * The V8 young generation of the runtime's own threads: the coordinator, each dataset thread and
 * the snapshot pool's workers. Node gives every worker V8's default, 48 MiB (two 16 MiB
 * semi-spaces and their large objects), and V8 grows a thread's new space towards it under steady
 * work and does not give it back: in a soak (one swap a second per dataset) these threads went,
 * one after another and minutes apart, from 1 to 32 MiB of new space with a live heap of 10–25
 * MiB, which was the RSS growth the soak measured (bench/RESULTS.md, "Soak growth, profiled").
 * Their live objects are few and short-lived (a machine, metadata, a task's bookkeeping; file
 * bytes are Buffers, outside the heap), so a 6 MiB young generation (new space at most 4 MiB)
 * costs them nothing measurable.
 */
export const SMALL_THREAD_YOUNG_GENERATION_MB = 6;

/** The coordinator's and the snapshot workers' limits. */
export const SMALL_THREAD_LIMITS = { maxYoungGenerationSizeMb: SMALL_THREAD_YOUNG_GENERATION_MB } as const;

/**
 * The query workers' young generation: 24 MiB (new space at most 16 MiB), half of V8's default.
 * They turn results into objects and strings, so theirs is larger than the small threads'; with
 * V8's default the DuckDB worker's new space moved between 4 and 32 MiB under steady queries. With
 * this one every query worker's heap was flat from minute 10 of an hour soak, and B1 and B9 did
 * not move (bench/RESULTS.md, "One-hour soak alone, 2026-12-03").
 */
export const QUERY_THREAD_YOUNG_GENERATION_MB = 24;

/** A running worker's young generation limit in MiB, 0 for V8's default (read by test hooks). */
export function youngGenerationOf(worker: Worker): number {
  return worker.resourceLimits?.maxYoungGenerationSizeMb ?? 0;
}
