/**
 * A swap as one snapshot task (`load`), run in-process as a pool worker runs it, on real snapshot
 * files of a file:// store: its progress on its port, in order; its answer; what it leaves on disk
 * when the file fails its checks or the dataset cancels it.
 */
import { mkdir, readdir, readFile, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { MessageChannel, type MessagePort } from 'node:worker_threads';
import { type DatasetMetadata, findRecordedSchema, type SnapshotEntry } from '@ferry/core';
import { generationDirFor, manifestPath } from '@ferry/snapshots';
import { createObjectStore } from '@ferry/store';
import { publishSnapshot } from '@ferry/writer';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { DatasetFiles, LoadProgress, SnapshotTask } from '../src/common/protocol.js';
import { LocationMetadataReader } from '../src/coordinator/metadata-reader.js';
import { SnapshotTaskRunner, TASK_ABORTED } from '../src/snapshot-pool/snapshot-tasks.js';
import { tempDir } from './support.js';

let work: string;
let location: string;
let dataset: DatasetMetadata;
const runner = new SnapshotTaskRunner();

beforeAll(async () => {
  work = await tempDir('ferry-snapshot-load-');
  await mkdir(join(work, 'store'));
  location = `file://${join(work, 'store')}/`;
  await publishSnapshot({
    dataset: 'orders',
    engine: 'duckdb',
    location,
    source: { sql: 'SELECT i::BIGINT AS id FROM range(100) t(i)' },
    notNull: ['id'],
  });
  const reader = new LocationMetadataReader(createObjectStore(location, {}), { windowMs: 0 });
  const reply = await reader.readFor('orders', undefined, true);
  if (reply.kind !== 'read' || reply.dataset === undefined) throw new Error('no metadata for orders');
  dataset = reply.dataset;
});

afterAll(async () => {
  await runner.close();
  await rm(work, { recursive: true, force: true });
});

/** A fresh directory with a live path in it, and the dataset's files there. */
async function filesIn(name: string): Promise<DatasetFiles> {
  const directory = join(work, name);
  await mkdir(directory);
  const livePath = join(directory, 'orders.duckdb');
  return {
    dataset: 'orders',
    engine: 'duckdb',
    livePath,
    generationDir: generationDirFor(livePath, directory, 'orders'),
    location,
  };
}

function current(): SnapshotEntry {
  const entry = dataset.snapshots.find((each) => each.snapshotId === dataset.currentSnapshotId);
  if (entry === undefined) throw new Error('no current snapshot');
  return entry;
}

/** Runs a load; collects what arrives on its port, in order. */
function load(
  files: DatasetFiles,
  entry: SnapshotEntry,
  before?: (port: MessagePort) => void,
  on: SnapshotTaskRunner = runner,
) {
  const { port1, port2 } = new MessageChannel();
  const progress: LoadProgress['stage'][] = [];
  port1.on('message', (message: LoadProgress) => progress.push(message.stage));
  before?.(port1);
  const recorded = findRecordedSchema(dataset);
  if (recorded === undefined) throw new Error('no recorded schema');
  const task: SnapshotTask = {
    kind: 'load',
    files,
    entry,
    recorded,
    recordedLocation: location,
    port: port2,
  };
  const closed = new Promise<void>((resolve) => port1.once('close', () => resolve()));
  return { answer: on.run(task), progress, closed };
}

describe('the load task (a swap as one task)', () => {
  it('downloads, verifies, commits and links: progress in order on its port, the snapshot in the live file', async () => {
    const files = await filesIn('ok');
    const { answer, progress, closed } = load(files, current());
    const { snapshot, generation } = await answer;
    await closed;
    expect(progress).toEqual(['downloaded', 'verified']);
    expect(snapshot.snapshotId).toBe(current().snapshotId);
    expect(snapshot.checksum).toBe(current().checksum.toLowerCase());
    expect(generation).toContain(files.generationDir);
    // The live file and its manifest (and the generation links) only: no temporary file is left.
    expect((await readdir(join(work, 'ok'))).sort()).toEqual([
      '.generations',
      'orders.duckdb',
      'orders.duckdb.ferry-blocks.json',
      'orders.duckdb.ferry.json',
    ]);
    const manifest = JSON.parse(await readFile(manifestPath(files.livePath), 'utf8')) as {
      snapshot: { snapshotId: number };
    };
    expect(manifest.snapshot.snapshotId).toBe(snapshot.snapshotId);
  });

  it('a file that fails its checks: downloaded, never verified, nothing committed, no temporary file left', async () => {
    const files = await filesIn('bad');
    const entry = { ...current(), checksum: '0'.repeat(64) };
    const { answer, progress, closed } = load(files, entry);
    await expect(answer).rejects.toMatchObject({ code: 'ERR_SNAPSHOT_CHECKSUM_MISMATCH' });
    await closed;
    expect(progress).toEqual(['downloaded']);
    expect(await readdir(join(work, 'bad'))).toEqual([]);
  });

  it('no checker to be had (its runner closed): downloaded, never verified, no temporary file left', async () => {
    const files = await filesIn('no-checker');
    const closedRunner = new SnapshotTaskRunner();
    await closedRunner.close();
    const { answer, progress, closed } = load(files, current(), undefined, closedRunner);
    await expect(answer).rejects.toThrow('The snapshot checkers are closed.');
    await closed;
    expect(progress).toEqual(['downloaded']);
    expect(await readdir(join(work, 'no-checker'))).toEqual([]);
  });

  it('cancelled by its dataset before it ends: refused with the abort, nothing committed, no temporary file left', async () => {
    const files = await filesIn('cancelled');
    const { answer, progress, closed } = load(files, current(), (port) => port.postMessage('abort'));
    await expect(answer).rejects.toThrow(TASK_ABORTED);
    await closed;
    expect(progress).not.toContain('verified');
    expect(await readdir(join(work, 'cancelled'))).toEqual([]);
  });
});
