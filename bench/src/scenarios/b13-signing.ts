/**
 * B13 signing: what checking a snapshot's signature costs a swap (issue 33). A DuckDB file is
 * published signed by the real writer; then, alternating in the same process, `authenticateSnapshot`
 * (`@ferry/snapshots`, the snapshot pool's task: one GET of the signature object, the Ed25519
 * verification, the schema digest and the statement compared with the metadata entry) runs against
 * the local S3, the same check runs with the signature object already in memory (its CPU alone),
 * the check beside a HEAD of the snapshot object (how the pool task runs it: the download then
 * skips its own HEAD) against that HEAD alone, and the SHA-256 of the snapshot file is computed
 * over its bytes (what every swap already pays).
 * The dataset-thread → snapshot-pool hop of the task is not included.
 */
import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { performance } from 'node:perf_hooks';
import {
  currentSnapshot,
  getDataset,
  type ObjectStore,
  parseMetadata,
  resolveSnapshotKey,
  signatureKeyOf,
} from '@ferry/core';
import { authenticateSnapshot } from '@ferry/snapshots';
import { createObjectStore, generateSigningKeyPair, TrustedKeySet } from '@ferry/store';
import { publishSnapshot } from '@ferry/writer';
import { buildFile, keyedColumns, QUERY_COLUMNS } from '../data.js';
import { formatValue } from '../format.js';
import { type GoalCheck, type Measurement, median, ratio, type Scenario } from '../scenario.js';
import { locationOf } from '../spicepod.js';

const PREFIX = 'b13/';
const DATASET = 'signed';

function p99(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * 0.99))] as number;
}

async function timed(work: () => Promise<unknown> | unknown): Promise<number> {
  const started = performance.now();
  await work();
  return performance.now() - started;
}

export const b13: Scenario = {
  id: 'b13',
  title: 'B13 signing',
  measures:
    'the signature check of one swap with ferry_trusted_keys: authenticateSnapshot against the local S3 (GET of the signature object, Ed25519 verify, schema digest, statement compared), and its CPU alone (the object in memory)',
  baseline: 'the SHA-256 of the same snapshot file over its bytes in memory, same process, interleaved',
  goal: "the check adds ≤ 1 ms per swap beyond the SHA-256 (p50 beside the download's HEAD, less the HEAD); its CPU alone ≤ 1 ms",
  async run(context) {
    const rows = context.quick ? 200_000 : 2_000_000;
    const checks = context.quick ? 200 : 1000;
    context.log(`building the ${rows}-row DuckDB file`);
    const file = await buildFile(context.workDir, 'duckdb', DATASET, rows, keyedColumns(1, QUERY_COLUMNS));
    const info = context.aws.info;
    const location = locationOf(PREFIX);
    const storeParams = {
      endpoint: info.serverEndpoint,
      region: info.region,
      allowHttp: true,
      auth: 'key' as const,
      accessKeyId: info.accessKeyId,
      secretAccessKey: info.secretAccessKey,
    };
    const key = generateSigningKeyPair();
    await publishSnapshot({
      dataset: DATASET,
      location,
      storeParams,
      source: { file: file.path },
      signingKey: key.privatePem,
    });
    const store = createObjectStore(location, storeParams);
    const samples = {
      check: [] as number[],
      cpu: [] as number[],
      get: [] as number[],
      head: [] as number[],
      paired: [] as number[],
      sha256: [] as number[],
    };
    try {
      const got = await store.get('metadata.json');
      if (got.status !== 'ok') throw new Error('B13: the signed publish left no metadata.json');
      const metadata = parseMetadata(new TextDecoder().decode(got.body), location);
      const dataset = getDataset(metadata, DATASET);
      const entry = dataset === undefined ? undefined : currentSnapshot(dataset);
      if (dataset === undefined || entry === undefined) throw new Error('B13: no current snapshot');
      const objectKey = resolveSnapshotKey(metadata.location, entry.uri);
      const sidecar = await store.get(signatureKeyOf(objectKey));
      if (sidecar.status !== 'ok') throw new Error('B13: the signed publish left no signature object');
      // The same check with the signature object already read: its CPU alone.
      const inMemory = {
        location,
        get: async () => sidecar,
      } as unknown as ObjectStore;
      const trusted = new TrustedKeySet([key.publicPem]);
      const input = { dataset, entry, key: objectKey, recordedLocation: metadata.location, trusted };
      const bytes = new Uint8Array(await readFile(file.path));
      const hashEvery = Math.max(1, Math.round(checks / (context.quick ? 10 : 20)));
      for (let warm = 0; warm < 20; warm++) {
        await authenticateSnapshot(store, input);
        await authenticateSnapshot(inMemory, input);
      }
      createHash('sha256').update(bytes).digest('hex');
      for (let n = 0; n < checks; n++) {
        samples.check.push(await timed(() => authenticateSnapshot(store, input)));
        samples.cpu.push(await timed(() => authenticateSnapshot(inMemory, input)));
        samples.get.push(await timed(() => store.get(signatureKeyOf(objectKey))));
        samples.head.push(await timed(() => store.head(objectKey)));
        samples.paired.push(
          await timed(() => Promise.all([authenticateSnapshot(store, input), store.head(objectKey)])),
        );
        if (n % hashEvery === 0)
          samples.sha256.push(await timed(() => createHash('sha256').update(bytes).digest('hex')));
      }
    } finally {
      await store.close();
    }
    const check = median(samples.check);
    const cpu = median(samples.cpu);
    const sha256 = median(samples.sha256);
    const get = median(samples.get);
    const head = median(samples.head);
    const paired = median(samples.paired);
    const added = paired - head;
    context.log(
      `check p50 ${check.toFixed(3)} ms, CPU p50 ${cpu.toFixed(3)} ms, GET p50 ${get.toFixed(3)} ms, with the HEAD ${paired.toFixed(3)} ms vs HEAD ${head.toFixed(3)} ms, SHA-256 p50 ${sha256.toFixed(1)} ms`,
    );
    const size = `${formatValue(file.size / 2 ** 20, 'MiB')} snapshot`;
    const measurements: Measurement[] = [
      {
        group: 'signature check per swap',
        metric: "p50, beside the HEAD the download makes first (the pool task's way)",
        unit: 'ms',
        value: paired,
        baseline: head,
        baselineLabel: 'the HEAD alone',
        ratio: ratio(paired, head),
      },
      {
        group: 'signature check per swap',
        metric: 'p50, against the local S3 (GET + verify)',
        unit: 'ms',
        value: check,
        baseline: sha256,
        baselineLabel: `SHA-256 of the ${size}`,
        ratio: ratio(check, sha256),
      },
      {
        group: 'signature check per swap',
        metric: 'p99, against the local S3 (GET + verify)',
        unit: 'ms',
        value: p99(samples.check),
        baseline: sha256,
        baselineLabel: `SHA-256 of the ${size}`,
        ratio: ratio(p99(samples.check), sha256),
      },
      {
        group: 'signature check per swap',
        metric: 'p50, CPU alone (signature object in memory)',
        unit: 'ms',
        value: cpu,
        baseline: sha256,
        baselineLabel: `SHA-256 of the ${size}`,
        ratio: ratio(cpu, sha256),
      },
      {
        group: 'signature check per swap',
        metric: 'p50, against the local S3, against a bare GET of the signature object',
        unit: 'ms',
        value: check,
        baseline: get,
        baselineLabel: 'GetObject of the signature object',
        ratio: ratio(check, get),
      },
    ];
    const goals: GoalCheck[] = [
      {
        goal: "the signature check adds ≤ 1 ms per swap beyond the SHA-256 (p50 of the check beside the download's HEAD, less the HEAD alone)",
        measured: `${formatValue(added, 'ms')} (${formatValue(paired, 'ms')} − ${formatValue(head, 'ms')}; the SHA-256 of the file ${formatValue(sha256, 'ms')})`,
        met: added <= 1,
      },
      {
        goal: 'its CPU (verify, digest, compare) ≤ 1 ms per swap',
        measured: formatValue(cpu, 'ms'),
        met: cpu <= 1,
      },
    ];
    const notes = [
      `${checks} checks of each kind, interleaved, after 20 of warm-up; the SHA-256 of the ${formatValue(file.size / 2 ** 20, 'MiB')} file (${rows.toLocaleString('en-US')} rows) ${samples.sha256.length} times between them.`,
      "The pool task makes the check's GET and the HEAD the download needs anyway at the same time and hands the HEAD to the download, so what the swap's path gains is the check beside the HEAD less the HEAD alone; the check run on its own (one more round trip) is shown too.",
      'The hop to the pool task (a message from the dataset thread through the coordinator) is not included. A dataset without ferry_trusted_keys pays nothing.',
    ];
    return { measurements, goals, notes, raw: { rows, size: file.size, samples } };
  },
};
