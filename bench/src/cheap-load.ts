/**
 * B9's cheap load for the profiling tools (cpu-split.ts, gc-split.ts): B9's two tables published to
 * a `file://` store (no local S3 needed), the spicepod a user writes for them (nothing under
 * `runtime`), the two servers compared (`ferry serve` and B9's plain server in Ferry's thread shape,
 * threaded-server.ts), and the load's requests: each client's n-th request is kind n % 4, every
 * text new (64 keep-alive clients).
 */

import { writeFile } from 'node:fs/promises';
import type { Agent } from 'node:http';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { publishSnapshot } from '@ferry/writer';
import { post } from './burst.js';
import { buildFile, keyedColumns, QUERY_COLUMNS } from './data.js';
import { B9_TABLES, CHEAP, type Kind } from './scenarios/b9-http.js';

export const CHEAP_CLIENTS = 64;
const { duckdb: DUCK, sqlite: LITE } = B9_TABLES;

export interface CheapLoadFiles {
  /** The spicepod a user writes for the two tables. */
  readonly pod: string;
  /** The command line of the threaded server on the same files (after any Node options). */
  readonly threadedArgs: readonly string[];
}

/** Builds B9's tables (`rows` each) in `workDir`, publishes them and writes the spicepod. */
export async function prepareCheapLoad(workDir: string, rows: number): Promise<CheapLoadFiles> {
  const duck = await buildFile(workDir, 'duckdb', DUCK, rows, keyedColumns(1, QUERY_COLUMNS));
  const lite = await buildFile(workDir, 'sqlite', LITE, rows, keyedColumns(1, QUERY_COLUMNS));
  const location = pathToFileURL(join(workDir, 'store/')).href;
  for (const file of [duck, lite]) {
    await publishSnapshot({ dataset: file.dataset, location, source: { file: file.path }, workDir });
  }
  const dataset = (name: string, engine: string) =>
    `  - from: postgres:public.${name}\n    name: ${name}\n    acceleration:\n      engine: ${engine}\n      mode: file\n      refresh_mode: snapshot\n      snapshots: enabled\n`;
  const pod = join(workDir, 'spicepod.yaml');
  await writeFile(
    pod,
    `version: v1\nkind: Spicepod\nname: cheap-load\nsnapshots:\n  enabled: true\n  location: ${location}\ndatasets:\n${dataset(DUCK, 'duckdb')}${dataset(LITE, 'sqlite')}`,
  );
  const threaded = fileURLToPath(new URL('./threaded-server.js', import.meta.url));
  return { pod, threadedArgs: [threaded, duck.path, lite.path, LITE] };
}

/** One client's requests against `base`: kind n % 4 of B9's cheap load, a new text each time. */
export function cheapOperation(base: URL, agent: Agent, rows: number): () => Promise<void> {
  let n = 0;
  return async () => {
    const kind = CHEAP[n % CHEAP.length] as Kind;
    const answer = await post(base, kind.sql(n++, rows), agent);
    if (answer.status !== 200)
      throw new Error(`${kind.label} answered ${answer.status} ${answer.error ?? ''}`);
  };
}
