/**
 * Resource classes of the DuckDB namespace: a query runs on an instance whose memory limit and
 * threads are the strictest of the datasets it reads (`duckdb_memory_limit`, `duckdb_threads`) and
 * the runtime's defaults. One instance per class; this says which class a query belongs to and how
 * messages name where its memory limit came from. Pure.
 */
import { datasetByName, type NamespaceCatalog } from './namespace-types.js';

/** A resource class: the limits a query runs under, and where they come from (for messages). */
export interface ResourceClass {
  readonly memoryLimitBytes: number;
  readonly threads: number;
  /** `duckdb_memory_limit of dataset 'orders'`, or the runtime setting. */
  readonly memorySource: string;
}

/** The key of a class (its limits; where they come from does not make another instance). */
export function resourceKey(resources: Pick<ResourceClass, 'memoryLimitBytes' | 'threads'>): string {
  return `${resources.memoryLimitBytes}:${resources.threads}`;
}

/** The class a query reading `datasets` runs in: the strictest of theirs and the defaults. */
export function resourceClassFor(
  defaults: ResourceClass,
  catalog: NamespaceCatalog,
  datasets: readonly string[],
): ResourceClass {
  let memoryOwner: string | undefined;
  let threads = defaults.threads;
  let memory = defaults.memoryLimitBytes;
  for (const name of datasets) {
    const dataset = datasetByName(catalog, name);
    if (dataset?.memoryLimitBytes !== undefined && dataset.memoryLimitBytes < memory) {
      memory = dataset.memoryLimitBytes;
      memoryOwner = dataset.name;
    }
    if (dataset?.threads !== undefined && dataset.threads < threads) threads = dataset.threads;
  }
  if (memoryOwner === undefined && threads === defaults.threads) return defaults;
  return {
    memoryLimitBytes: memory,
    threads,
    memorySource:
      memoryOwner === undefined ? defaults.memorySource : `duckdb_memory_limit of dataset '${memoryOwner}'`,
  };
}
