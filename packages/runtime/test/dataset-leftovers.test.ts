/**
 * What a dataset leaves behind over a long run. A run killed mid-download (a crash of the process,
 * or of the coordinator, whose snapshot workers end with it) leaves its temporary file beside the
 * live file; the next start of the dataset removes it, whether or not the spicepod names its engine.
 */
import { mkdir, readdir, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { localS3Params } from '@ferry/test-support';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createRuntime, memoryLogger, type Runtime } from '../src/index.js';
import { BUCKET, publishVersion, tempDir, useLocalAws } from './support.js';

const aws = useLocalAws();
let dataDir: string;
let runtime: Runtime | undefined;

beforeAll(async () => {
  dataDir = await tempDir('ferry-leftovers-');
});

afterAll(async () => {
  await runtime?.close();
  await rm(dataDir, { recursive: true, force: true });
});

/** A `from: s3://… file_format: snapshot` dataset: its engine is taken from metadata.json. */
function engineFromMetadataPod(prefix: string): string {
  const params = Object.entries({ file_format: 'snapshot', ...localS3Params(aws) });
  return [
    'version: v1',
    'kind: Spicepod',
    'name: leftovers',
    'datasets:',
    `  - from: s3://${BUCKET}/${prefix}`,
    '    name: partner',
    '    params:',
    ...params.map(([key, value]) => `      ${key}: ${value}`),
    '',
  ].join('\n');
}

describe('temporary files of an earlier run', () => {
  it('are removed when a dataset whose engine comes from metadata.json starts', async () => {
    const prefix = 'leftovers/';
    await publishVersion(aws, 'partner', 'duckdb', 1, { rows: 10, prefix });
    await mkdir(dataDir, { recursive: true });
    // What a run killed mid-download leaves beside the live file (`<live>.ferry-tmp-<id>-<hex>`).
    const leftover = 'partner.db.ferry-tmp-7-0badf00d';
    await writeFile(join(dataDir, leftover), Buffer.alloc(64 * 1024, 1));
    const logger = memoryLogger();
    runtime = await createRuntime(
      { yaml: engineFromMetadataPod(prefix), baseDir: dataDir },
      { logger, dataDir },
    );
    await runtime.ready(undefined, { timeoutMs: 30_000 });
    expect(runtime.status('partner').engine).toBeUndefined();
    // The line of Spice's snapshot data connector, not its acceleration's.
    expect(logger.records.map((record) => record.message)).toContain(
      `Dataset 'partner' loads the duckdb snapshots published at 's3://${BUCKET}/${prefix}'; it is read-only and checks for newer snapshots on its refresh interval`,
    );
    const files = await readdir(dataDir);
    expect(files).toContain('partner.db');
    expect(files.filter((name) => name.includes('.ferry-tmp-'))).toEqual([]);
  });
});
