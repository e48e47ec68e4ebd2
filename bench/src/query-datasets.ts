/**
 * The two datasets B1, B9 and B15 query: one DuckDB and one SQLite file of the same rows (the query
 * columns), published under one prefix, and a spicepod serving both straight from the store.
 */
import type { FileFormat } from '@ferry/core';
import { type BuiltFile, buildFile, keyedColumns, QUERY_COLUMNS } from './data.js';
import type { ScenarioContext } from './scenario.js';
import { locationOf, spicepod } from './spicepod.js';

export interface QueryDatasets {
  /** The files built, by engine (the direct baselines open them). */
  readonly files: ReadonlyMap<FileFormat, BuiltFile>;
  /** The spicepod serving both datasets. */
  readonly pod: string;
}

export async function publishQueryDatasets(
  context: ScenarioContext,
  prefix: string,
  names: { readonly duckdb: string; readonly sqlite: string },
  rows: number,
  options: { readonly resultsCache?: boolean } = {},
): Promise<QueryDatasets> {
  context.log(`building ${rows}-row DuckDB and SQLite files`);
  const files = new Map<FileFormat, BuiltFile>();
  for (const engine of ['duckdb', 'sqlite'] as const) {
    const dataset = names[engine];
    const file = await buildFile(context.workDir, engine, dataset, rows, keyedColumns(1, QUERY_COLUMNS));
    files.set(engine, file);
    await context.aws.publish({ dataset, location: locationOf(prefix), file: file.path, engine });
  }
  return { files, pod: queryDatasetsPod(context, prefix, names, options) };
}

/** The spicepod of the two datasets {@link publishQueryDatasets} published under `prefix`. */
export function queryDatasetsPod(
  context: ScenarioContext,
  prefix: string,
  names: { readonly duckdb: string; readonly sqlite: string },
  options: { readonly resultsCache?: boolean } = {},
): string {
  return spicepod({
    aws: context.aws.info,
    prefix,
    direct: true,
    ...(options.resultsCache === undefined ? {} : { resultsCache: options.resultsCache }),
    datasets: [
      { name: names.duckdb, engine: 'duckdb', interval: '1h' },
      { name: names.sqlite, engine: 'sqlite', interval: '1h' },
    ],
  });
}
