import { useLocalAws } from '@ferry/test-support/suite';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  type Behaviour,
  BUCKET,
  collect,
  DATASET,
  nextEvent,
  publish,
  readMetadata,
  type Started,
  servedVersion,
  setCurrentId,
  settledStatus,
  snapshotFile,
  spicepod,
  startRuntime,
  writeMetadata,
} from './support.js';

const { aws, proxy } = useLocalAws({ buckets: [BUCKET], faultProxy: true });

const OVERSIZED = `{"format-version":1,"pad":"${'x'.repeat(17 * 1024 * 1024)}"}`;
const READ_FAILED = `Reading the snapshot metadata of dataset '${DATASET}' failed: `;
const RETRYING = `Retrying the snapshot check of dataset '${DATASET}' in `;

interface BrokenMetadata {
  readonly name: string;
  readonly code: string;
  readonly message: (location: string) => string;
  /** Permanent errors are logged at `error` on every check and never backed off. */
  readonly permanent: boolean;
  /** Breaks metadata.json (or its reads); returns how to undo it. */
  break(prefix: string): Promise<() => Promise<void>>;
}

const BROKEN: readonly BrokenMetadata[] = [
  {
    name: 'malformed JSON',
    code: 'ERR_METADATA_INVALID',
    message: (location) => `Invalid metadata.json in location '${location}': not valid JSON (`,
    permanent: false,
    async break(prefix) {
      const saved = await readMetadata(aws, prefix);
      await writeMetadata(aws, prefix, '{"format-version": 1, "location": ');
      return () => writeMetadata(aws, prefix, saved);
    },
  },
  {
    name: 'larger than the 16 MiB cap',
    code: 'ERR_OBJECT_TOO_LARGE',
    message: (location) =>
      `Object ${location}metadata.json is ${OVERSIZED.length} bytes, more than the ${16 * 1024 * 1024} allowed`,
    permanent: false,
    async break(prefix) {
      proxy.setRules([
        {
          method: 'GET',
          target: `${BUCKET}/${prefix}metadata.json`,
          fault: { kind: 'replace', body: OVERSIZED },
        },
      ]);
      return async () => proxy.clear();
    },
  },
  {
    name: 'an unsupported format-version',
    code: 'ERR_UNSUPPORTED_FORMAT_VERSION',
    message: (location) =>
      `unsupported format version 2 in location '${location}'; upgrade Ferry or point it at a location written with format-version 1.`,
    permanent: true,
    async break(prefix) {
      const saved = await readMetadata(aws, prefix);
      await writeMetadata(aws, prefix, { ...saved, 'format-version': 2 });
      return () => writeMetadata(aws, prefix, saved);
    },
  },
];

function runtimeFor(behaviour: Behaviour, prefix: string) {
  const state = { started: undefined as Started | undefined, version: 1, snapshotId: 0 };
  beforeAll(async () => {
    state.snapshotId = (await publish(aws, prefix, await snapshotFile('duckdb', 1))).snapshotId;
    state.started = await startRuntime(spicepod(aws, { prefix, endpoint: proxy.endpoint, behaviour }));
    await state.started.runtime.ready(DATASET, { timeoutMs: 30_000 });
  });
  afterAll(async () => {
    proxy.clear();
    await state.started?.runtime.close();
  });
  return state;
}

function current(state: { started: Started | undefined }): Started {
  if (state.started === undefined) throw new Error('the runtime did not start');
  return state.started;
}

describe.each(['warn', 'retry', 'fallback'] as const)('broken metadata.json under %s', (behaviour) => {
  const prefix = `metadata-${behaviour}/`;
  const location = `s3://${BUCKET}/${prefix}`;
  const state = runtimeFor(behaviour, prefix);

  it.each(BROKEN)('$name: keeps serving, says why, checks again, recovers', async (broken) => {
    const s = current(state);
    const mark = s.logger.records.length;
    const errors = collect(s.runtime, 'error');
    const failed = settledStatus(s.runtime, (status) => status.lastPollResult === 'failed');
    const undo = await broken.break(prefix);
    const status = await failed;

    expect(await servedVersion(s.runtime)).toEqual({ version: state.version, snapshotId: state.snapshotId });
    expect(status.state).toBe('serving');
    expect(status.lastError?.code).toBe(broken.code);
    expect(status.lastError?.message).toContain(broken.message(location));
    expect(errors[0]).toMatchObject({ dataset: DATASET, code: broken.code });

    const backsOff = behaviour === 'retry' && !broken.permanent;
    const line = s.logger.since(mark).find((r) => r.message.startsWith(READ_FAILED));
    expect(line?.level).toBe(broken.permanent ? 'error' : 'warn');
    expect(line?.message).toContain(broken.message(location));
    expect(line?.message).toMatch(
      backsOff ? / \(retrying with backoff\)$/ : new RegExp(` \\(keeping snapshot ${state.snapshotId}\\)$`),
    );
    // The next check: retry backs off a transient failure; otherwise every check fails (and logs) again.
    if (backsOff) {
      await s.logger.waitFor((r) => r.message.startsWith(RETRYING), { since: mark });
    } else {
      await s.logger.waitFor((r) => r.message.startsWith(READ_FAILED), { since: mark, count: 2 });
      expect(s.logger.since(mark).some((r) => r.message.startsWith(RETRYING))).toBe(false);
    }

    // Recovery: metadata.json is right again; the next check finds the snapshot it serves.
    const recovered = nextEvent(s.runtime, 'poll', (e) => e.result === 'same' || e.result === 'unchanged');
    await undo();
    await recovered;
    expect(s.runtime.status(DATASET).status?.servingSnapshotId).toBe(state.snapshotId);
  });
});

describe('metadata.json going backwards, and publishes racing a check (behaviour-independent: warn)', () => {
  const prefix = 'metadata-order/';
  const state = runtimeFor('warn', prefix);

  it('a current id older than the loaded one (rollback): keeps serving, warns on every check, reloads nothing', async () => {
    const s = current(state);
    const newer = await publish(aws, prefix, await snapshotFile('duckdb', 2));
    await nextEvent(s.runtime, 'swap', (e) => e.to === newer.snapshotId);
    state.version = 2;
    state.snapshotId = newer.snapshotId;

    const mark = s.logger.records.length;
    const older = settledStatus(s.runtime, (status) => status.lastPollResult === 'older');
    await setCurrentId(aws, prefix, newer.snapshotId - 1);
    const status = await older;
    expect(await servedVersion(s.runtime)).toEqual({ version: 2, snapshotId: newer.snapshotId });
    expect(status.servingSnapshotId).toBe(newer.snapshotId);
    // The ETag is dropped, so every check reads in full and warns again.
    expect(status.etag).toBeNull();
    const warnings = await s.logger.waitFor(
      (r) =>
        r.message ===
        'snapshot metadata current id is older than the locally loaded snapshot; skipping reload to avoid regression',
      { since: mark, count: 2 },
    );
    expect(warnings.map((r) => [r.level, r.fields.currentSnapshotId, r.fields.loadedSnapshotId])).toEqual([
      ['warn', newer.snapshotId - 1, newer.snapshotId],
      ['warn', newer.snapshotId - 1, newer.snapshotId],
    ]);
    expect(s.runtime.metrics().swaps[DATASET]).toBe(2);

    const same = nextEvent(s.runtime, 'poll', (e) => e.result === 'same');
    await setCurrentId(aws, prefix, newer.snapshotId);
    await same;
    expect(s.runtime.status(DATASET).status?.lastPollResult).toBe('same');
  });

  it('a publish while a snapshot download is in flight: the download finishes, the next check loads the newer one', async () => {
    const s = current(state);
    const errors = collect(s.runtime, 'error');
    const swaps = collect(s.runtime, 'swap');
    let racing: Awaited<ReturnType<typeof publish>> | undefined;
    proxy.setRules([
      {
        method: 'GET',
        target: /\.duckdb$/,
        times: 1,
        fault: { kind: 'pass' },
        onMatch: async () => {
          racing = await publish(aws, prefix, await snapshotFile('duckdb', state.version + 2));
        },
      },
    ]);
    const first = await publish(aws, prefix, await snapshotFile('duckdb', state.version + 1));
    await nextEvent(s.runtime, 'swap', (e) => racing !== undefined && e.to === racing.snapshotId);
    expect(swaps.map((e) => e.to)).toEqual([first.snapshotId, racing?.snapshotId]);
    expect(errors).toEqual([]);
    state.version += 2;
    state.snapshotId = racing?.snapshotId ?? -1;
    expect(await servedVersion(s.runtime)).toEqual({ version: state.version, snapshotId: state.snapshotId });
  });
});
