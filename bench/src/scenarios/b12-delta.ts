/**
 * B12 delta: what a reader pays for a snapshot that shares most of its blocks with the one it
 * holds. Per engine (DuckDB, SQLite): a file of the stated size is published and served; the
 * incremental writer appends 1 % of its rows and publishes (with its block manifest); the reader is
 * timed from `poll.now` to the swap event and its fetched bytes read from `metrics().lastDownloads`.
 * Then a file rebuilt from scratch (sharing nothing) is published with its manifest and timed the
 * same way. Baselines in the same run, same reader: each of those two files published again
 * without a manifest (as a Spice writer would), which the reader downloads whole.
 */
import { execFile } from 'node:child_process';
import { copyFile, mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { promisify } from 'node:util';
import type { FileFormat, ObjectStore } from '@ferry/core';
import type { Runtime } from '@ferry/runtime';
import { createObjectStore } from '@ferry/store';
import { publishIncremental, publishSnapshot } from '@ferry/writer';
import { BULK_COLUMNS, buildFileOfSize, keyedColumns } from '../data.js';
import { formatRatio, formatValue } from '../format.js';
import { loggedErrorsNote, mib, startRuntime, swapTo } from '../harness.js';
import type { GoalCheck, Measurement, Scenario } from '../scenario.js';
import { locationOf, spicepod } from '../spicepod.js';

const PREFIX = 'b12/';
const FETCH_GOAL = 0.05;
const TIME_GOAL = 0.2;
const NOTHING_GOAL = 1.05;

interface Refresh {
  readonly ms: number;
  readonly fetchedBytes: number;
  readonly reusedBytes: number;
}

/**
 * Runs a publish again when the store failed it (fauxqs, on a loaded machine, has lost a 1 GiB
 * multipart upload: `NoSuchUpload` on completion); a failed upload commits nothing.
 */
async function publishing<T>(context: { log(message: string): void }, publish: () => Promise<T>): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await publish();
    } catch (error) {
      if ((error as { code?: unknown }).code !== 'ERR_STORE' || attempt === 3) throw error;
      context.log(`publish failed (${(error as Error).message}); publishing again`);
    }
  }
}

/**
 * Writes back the disk's dirty pages (`sync`) so that a timed refresh does not wait behind the
 * write-back of the files built and published just before it (a 1 GiB build then a publish leave
 * up to a GiB dirty, and the refresh ends with an fsync). Where `sync` is missing, the refresh is
 * timed as it is.
 */
async function settleDisk(): Promise<void> {
  await promisify(execFile)('sync').catch(() => undefined);
}

/**
 * Reads the published object once, untimed, so that every timed refresh fetches an object the
 * store has served before. Without it, the first download of a freshly published file ran
 * 1.28–1.38× slower than a download of the same bytes published a second time (three quiet runs,
 * SQLite's rebuilt file; the reader's own manifest step took 46 ms of it), which judged the local
 * store's first read, not the reader.
 */
async function readOnce(store: ObjectStore, key: string): Promise<void> {
  for await (const _chunk of store.read(key)) {
    // Discarded: only the store's side of the read matters.
  }
}

/**
 * poll.now → swap event for the snapshot just published, and what the download fetched (after the
 * object was read once and the disk synced, untimed).
 */
async function refresh(
  runtime: Runtime,
  store: ObjectStore,
  dataset: string,
  published: { readonly snapshotId: number; readonly key: string },
): Promise<Refresh> {
  const { snapshotId } = published;
  await readOnce(store, published.key);
  await settleDisk();
  const swapped = swapTo(runtime, dataset, snapshotId, 600_000);
  const began = performance.now();
  await runtime.send(dataset, 'poll.now');
  await swapped;
  const ms = performance.now() - began;
  const last = runtime.metrics().lastDownloads[dataset];
  return { ms, fetchedBytes: last?.fetchedBytes ?? Number.NaN, reusedBytes: last?.reusedBytes ?? Number.NaN };
}

/** The statement appending `count` rows after the first `rows` (the same columns as the file). */
function appendStatement(engine: FileFormat, dataset: string, rows: number, count: number): string {
  const columns = keyedColumns(1, BULK_COLUMNS);
  if (engine === 'duckdb') {
    const select = columns.map((column) => `${column.duckdb} AS ${column.name}`).join(', ');
    return `INSERT INTO "${dataset}" SELECT ${select} FROM range(${rows}, ${rows + count}) t(i)`;
  }
  const values = columns.map((column) => column.sqlite).join(', ');
  return (
    `INSERT INTO "${dataset}" WITH RECURSIVE c(i) AS (SELECT ${rows} UNION ALL SELECT i + 1 FROM c WHERE i < ${rows + count - 1}) ` +
    `SELECT ${values} FROM c`
  );
}

export const b12: Scenario = {
  id: 'b12',
  title: 'B12 delta',
  measures:
    'a reader holding the previous snapshot: 1 % of rows appended by the incremental writer (bytes fetched, poll.now → swap), and a snapshot that shares nothing, DuckDB and SQLite',
  baseline: 'the same reader downloading the same file whole (published again without a block manifest)',
  goal: '1 GiB, 1 % appended: ≤ 5 % of the bytes fetched and ≤ 0.2× the full download time; a snapshot sharing nothing ≤ 1.05× the full download',
  async run(context) {
    const bytes = context.quick ? 16 * 2 ** 20 : 2 ** 30;
    const statedMiB = 1024;
    const location = locationOf(PREFIX);
    const store: ObjectStore = createObjectStore(location, {
      endpoint: context.aws.info.serverEndpoint,
      region: context.aws.info.region,
      allowHttp: true,
      auth: 'key',
      accessKeyId: context.aws.info.accessKeyId,
      secretAccessKey: context.aws.info.secretAccessKey,
    });
    const measurements: Measurement[] = [];
    const goals: GoalCheck[] = [];
    const notes: string[] = [];
    const raw: Record<string, unknown> = {};
    try {
      for (const engine of ['duckdb', 'sqlite'] as const) {
        const dataset = `delta_${engine}`;
        const dir = join(context.workDir, engine);
        await mkdir(dir, { recursive: true });
        context.log(`building a ~${formatValue(mib(bytes), 'MiB')} ${engine} file`);
        const base = await buildFileOfSize(dir, engine, dataset, bytes, 1);
        const first = await publishing(context, () =>
          publishSnapshot({ dataset, location: store, source: { file: base.path }, engine }),
        );
        const stateDir = join(dir, 'writer');
        await mkdir(stateDir, { recursive: true });
        // The writer's kept copy: it proves it holds the current snapshot by its SHA-256 (or downloads it).
        await copyFile(base.path, join(stateDir, `${dataset}.snapshot`));
        const { runtime, logger } = await startRuntime(
          context,
          spicepod({
            aws: context.aws.info,
            prefix: PREFIX,
            direct: true,
            datasets: [{ name: dataset, engine, interval: '1h' }],
          }),
          { metadataWindowMs: 0, snapshotIdleTimeoutMs: 3_600_000 },
        );
        try {
          await runtime.ready(dataset, { timeoutMs: 600_000 });
          context.log(`${engine}: appending 1 % of ${base.rows} rows with the incremental writer`);
          const appended = await publishing(context, () =>
            publishIncremental({
              dataset,
              location: store,
              stateDir,
              statements: [appendStatement(engine, dataset, base.rows, Math.round(base.rows / 100))],
            }),
          );
          const delta = await refresh(runtime, store, dataset, appended);
          context.log(
            `${engine}: delta ${delta.ms.toFixed(0)} ms, fetched ${delta.fetchedBytes} of ${appended.size}`,
          );

          const rebuilt = await buildFileOfSize(dir, engine, dataset, bytes, 2);
          const fresh = await publishing(context, () =>
            publishSnapshot({ dataset, location: store, source: { file: rebuilt.path }, engine }),
          );
          const nothing = await refresh(runtime, store, dataset, fresh);
          context.log(`${engine}: sharing nothing ${nothing.ms.toFixed(0)} ms`);

          // Baselines: the same two files, published without a manifest, downloaded whole.
          const freshWhole = await publishing(context, () =>
            publishSnapshot({
              dataset,
              location: store,
              source: { file: rebuilt.path },
              engine,
              blockManifest: false,
            }),
          );
          const nothingFull = await refresh(runtime, store, dataset, freshWhole);
          const appendedWhole = await publishing(context, () =>
            publishSnapshot({
              dataset,
              location: store,
              source: { file: join(stateDir, `${dataset}.snapshot`) },
              engine,
              blockManifest: false,
            }),
          );
          const deltaFull = await refresh(runtime, store, dataset, appendedWhole);
          context.log(
            `${engine}: full downloads ${deltaFull.ms.toFixed(0)} / ${nothingFull.ms.toFixed(0)} ms`,
          );

          const group = `${engine === 'duckdb' ? 'DuckDB' : 'SQLite'} ${formatValue(mib(appended.size), 'MiB')}`;
          const fetchedShare = delta.fetchedBytes / appended.size;
          const timeRatio = delta.ms / deltaFull.ms;
          const nothingRatio = nothing.ms / nothingFull.ms;
          measurements.push(
            {
              group,
              metric: '1 % appended: bytes fetched (the rest copied from the held file)',
              unit: 'MiB',
              value: mib(delta.fetchedBytes),
              baseline: mib(appended.size),
              baselineLabel: 'file size',
              ratio: fetchedShare,
            },
            {
              group,
              metric: '1 % appended: poll.now → swap event',
              unit: 'ms',
              value: delta.ms,
              baseline: deltaFull.ms,
              baselineLabel: 'same file downloaded whole',
              ratio: timeRatio,
            },
            {
              group,
              metric: 'sharing nothing (rebuilt), with its manifest: poll.now → swap event',
              unit: 'ms',
              value: nothing.ms,
              baseline: nothingFull.ms,
              baselineLabel: 'same file, no manifest',
              ratio: nothingRatio,
            },
          );
          const at = { size: statedMiB, unit: 'MiB', ran: mib(bytes) };
          goals.push(
            {
              goal: `${engine}: 1 % appended, ≤ ${FETCH_GOAL * 100} % of the bytes fetched`,
              measured: `${formatValue(mib(delta.fetchedBytes), 'MiB')} of ${formatValue(mib(appended.size), 'MiB')} = ${(fetchedShare * 100).toFixed(2)} %`,
              met: fetchedShare <= FETCH_GOAL,
              at,
            },
            {
              goal: `${engine}: 1 % appended, served in ≤ ${TIME_GOAL}× the full download's time`,
              measured: `${formatValue(delta.ms, 'ms')} vs ${formatValue(deltaFull.ms, 'ms')} = ${formatRatio(timeRatio)}`,
              met: timeRatio <= TIME_GOAL,
              at,
            },
            {
              goal: `${engine}: a snapshot sharing nothing ≤ ${NOTHING_GOAL}× the full download`,
              measured: `${formatValue(nothing.ms, 'ms')} vs ${formatValue(nothingFull.ms, 'ms')} = ${formatRatio(nothingRatio)}`,
              met: nothingRatio <= NOTHING_GOAL,
              at,
            },
          );
          raw[engine] = { size: appended.size, first: first.size, delta, deltaFull, nothing, nothingFull };
          const logged = loggedErrorsNote(logger);
          if (logged !== undefined) notes.push(`${engine}: ${logged}`);
        } finally {
          await runtime.close();
        }
      }
    } finally {
      await store.close();
    }
    notes.push(
      'Before each timed refresh the new object is read once through the store, untimed (so each refresh fetches an object the store has served before), and the disk is synced.',
      'Each refresh is timed from runtime.send(poll.now) to the swap event: metadata read, HEAD, the block manifest GET, the delta assembly (unchanged blocks read from the live file, changed ranges fetched 4 at a time, SHA-256 of the whole new file as it is written, fsync) or the whole download, then the schema check and the swap. A delta still writes, hashes and fsyncs the whole new file: only the network part shrinks.',
      'The incremental writer appends 1 % of the rows with one INSERT (DuckDB: INSERT … SELECT over range(); SQLite: a recursive CTE) to its kept copy of the current snapshot, checkpoints and publishes it with its block manifest (DuckDB: a 12 KiB header block then 256 KiB blocks; SQLite: 64 KiB blocks).',
      "The 'sharing nothing' file is built from scratch with other values; the reader holds the delta's file and its kept manifest, so the manifest costs one GET and a comparison before the whole download.",
    );
    return { measurements, goals, notes, raw };
  },
};
