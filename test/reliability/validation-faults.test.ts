/**
 * The fault matrix for bad snapshots: a writer (or an attacker with write access) makes current a
 * snapshot whose entry or object is wrong — size, checksum, checksum algorithm, engine, recorded
 * schema, the file's real schema, a listed object that is gone, a file that is not a database.
 * Under each `bootstrap_on_failure_behavior` a runtime serving a good snapshot, with a good newer
 * one just below the bad current one, must never serve the bad file: `warn` and `retry` keep what
 * they serve (`retry` backing off on download-stage failures), `fallback` loads the good one. The
 * cases also check that refusals before download make no GET of the object, that temporary files
 * are removed, what the next check does, and that a later good publish is picked up.
 */
import { randomBytes } from 'node:crypto';
import { useLocalAws } from '@ferry/test-support/suite';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  type Behaviour,
  BUCKET,
  collect,
  DATASET,
  nextEvent,
  type Published,
  publish,
  readMetadata,
  type Started,
  servedVersion,
  settledStatus,
  sha256Hex,
  snapshotFile,
  spicepod,
  startRuntime,
  temporaries,
  whilePaused,
  writeMetadata,
} from './support.js';

const { aws, proxy } = useLocalAws({ buckets: [BUCKET], faultProxy: true });

interface BadSnapshot {
  readonly name: string;
  readonly code: string;
  /** Publishes the bad snapshot (file version `version`) as the current one. */
  publish(prefix: string, version: number): Promise<Published & { readonly expected: string }>;
  /** Whether the object is downloaded before the refusal. */
  readonly downloads: boolean;
  /** Refused by the machine before download (engine, recorded schema): never retried with backoff. */
  readonly beforeDownload: boolean;
  /** Whether `fallback` can load the good snapshot below it (a recorded-schema refusal applies to all). */
  readonly fallsBack: boolean;
  /** metadata.json must be put back afterwards (a widened schema cannot be narrowed by a publish). */
  readonly restore: boolean;
}

const BAD: readonly BadSnapshot[] = [
  {
    name: 'wrong snapshot-size',
    code: 'ERR_SNAPSHOT_SIZE_MISMATCH',
    downloads: false,
    beforeDownload: false,
    fallsBack: true,
    restore: false,
    async publish(prefix, version) {
      const file = await snapshotFile('duckdb', version);
      const published = await publish(aws, prefix, file, {
        mutate: (entry) => {
          entry['snapshot-size'] = file.size + 1;
        },
      });
      return {
        ...published,
        expected: `Snapshot ${published.uri} size mismatch. expected=${file.size + 1} actual=${file.size}`,
      };
    },
  },
  {
    name: 'wrong snapshot-checksum',
    code: 'ERR_SNAPSHOT_CHECKSUM_MISMATCH',
    downloads: true,
    beforeDownload: false,
    fallsBack: true,
    restore: false,
    async publish(prefix, version) {
      const file = await snapshotFile('duckdb', version);
      const wrong = sha256Hex('not the snapshot');
      const published = await publish(aws, prefix, file, {
        mutate: (entry) => {
          entry['snapshot-checksum'] = wrong;
        },
      });
      return {
        ...published,
        expected: `Snapshot ${published.uri} checksum mismatch. expected=${wrong} actual=${file.checksum}`,
      };
    },
  },
  {
    name: 'unsupported snapshot-checksum-algorithm',
    code: 'ERR_SNAPSHOT_CHECKSUM_ALGORITHM',
    downloads: false,
    beforeDownload: false,
    fallsBack: true,
    restore: false,
    async publish(prefix, version) {
      const published = await publish(aws, prefix, await snapshotFile('duckdb', version), {
        mutate: (entry) => {
          entry['snapshot-checksum-algorithm'] = 'MD5';
        },
      });
      return { ...published, expected: `Snapshot ${published.uri} uses unsupported checksum algorithm MD5` };
    },
  },
  {
    name: 'snapshot-engine of another engine',
    code: 'ERR_SNAPSHOT_ENGINE_MISMATCH',
    downloads: false,
    beforeDownload: true,
    fallsBack: true,
    restore: false,
    async publish(prefix, version) {
      const published = await publish(aws, prefix, await snapshotFile('duckdb', version), {
        mutate: (entry) => {
          entry['snapshot-engine'] = 'sqlite';
        },
      });
      return {
        ...published,
        expected: `Snapshot ${published.snapshotId} of dataset '${DATASET}' was written by engine 'sqlite' but the dataset's engine is 'duckdb'; publish a duckdb snapshot or change the dataset's engine.`,
      };
    },
  },
  {
    name: 'a listed snapshot object that is missing (404)',
    code: 'ERR_SNAPSHOT_OBJECT_MISSING',
    downloads: false,
    beforeDownload: false,
    fallsBack: true,
    restore: false,
    async publish(prefix, version) {
      const published = await publish(aws, prefix, await snapshotFile('duckdb', version), {
        skipUpload: true,
      });
      return {
        ...published,
        expected: `Snapshot ${published.uri} of dataset '${DATASET}' is listed in metadata.json but the object does not exist; publish a new snapshot or restore the object.`,
      };
    },
  },
  {
    name: 'a snapshot file that is not a database',
    code: 'ERR_SNAPSHOT_NOT_A_DATABASE',
    downloads: true,
    beforeDownload: false,
    fallsBack: true,
    restore: false,
    async publish(prefix, version) {
      const junk = new Uint8Array(randomBytes(300 * 1024));
      const published = await publish(aws, prefix, await snapshotFile('duckdb', version), {
        body: junk,
        mutate: (entry) => {
          entry['snapshot-size'] = junk.byteLength;
          entry['snapshot-checksum'] = sha256Hex(junk);
        },
      });
      return { ...published, expected: published.uri };
    },
  },
  {
    name: "a file whose table's real schema differs from the recorded one",
    code: 'ERR_SNAPSHOT_SCHEMA_MISMATCH',
    downloads: true,
    beforeDownload: false,
    fallsBack: true,
    restore: false,
    async publish(prefix, version) {
      const wide = await snapshotFile('duckdb', version, { wide: true });
      const published = await publish(aws, prefix, await snapshotFile('duckdb', version), {
        body: wide.bytes,
        mutate: (entry) => {
          entry['snapshot-size'] = wide.size;
          entry['snapshot-checksum'] = wide.checksum;
        },
      });
      return { ...published, expected: published.uri };
    },
  },
  {
    name: 'a recorded schema incompatible with the served one',
    code: 'ERR_SNAPSHOT_SCHEMA_MISMATCH',
    downloads: false,
    beforeDownload: true,
    fallsBack: false,
    restore: true,
    async publish(prefix, version) {
      const published = await publish(aws, prefix, await snapshotFile('duckdb', version, { wide: true }));
      return {
        ...published,
        expected: `Snapshot ${published.snapshotId} of dataset '${DATASET}' has a schema incompatible with the one being served`,
      };
    },
  },
];

describe.each(['warn', 'retry', 'fallback'] as const)(
  'bad snapshots under bootstrap_on_failure_behavior: %s',
  (behaviour: Behaviour) => {
    const prefix = `validation-${behaviour}/`;
    const state = { started: undefined as Started | undefined, version: 1, snapshotId: 0 };

    beforeAll(async () => {
      state.snapshotId = (await publish(aws, prefix, await snapshotFile('duckdb', 1))).snapshotId;
      state.started = await startRuntime(
        spicepod(aws, { prefix, endpoint: proxy.endpoint, behaviour, interval: '300ms' }),
      );
      await state.started.runtime.ready(DATASET, { timeoutMs: 30_000 });
    });

    afterAll(async () => {
      await state.started?.runtime.close();
    });

    it.each(BAD)('$name: never served; what serves, logs, status and the next check', async (bad) => {
      const s = state.started;
      if (s === undefined) throw new Error('the runtime did not start');
      const before = { version: state.version, snapshotId: state.snapshotId };
      const saved = await readMetadata(aws, prefix);
      const mark = s.logger.records.length;
      const errors = collect(s.runtime, 'error');
      const fallsBack = behaviour === 'fallback' && bad.fallsBack;
      const backsOff = behaviour === 'retry' && !bad.beforeDownload;
      let good: Published | undefined;
      let broken: (Published & { expected: string }) | undefined;
      let ended: Promise<unknown> = Promise.resolve();
      await whilePaused(s.runtime, async () => {
        good = await publish(aws, prefix, await snapshotFile('duckdb', before.version + 1));
        broken = await bad.publish(prefix, before.version + 2);
        ended = settledStatus(
          s.runtime,
          (status) => status.lastPollResult === (fallsBack ? 'newer' : 'refused'),
        );
      });
      if (good === undefined || broken === undefined) throw new Error('publish failed');
      const status = (await ended) as Awaited<ReturnType<typeof settledStatus>>;

      // What serves: never the bad snapshot.
      const serving = fallsBack
        ? { version: before.version + 1, snapshotId: good.snapshotId }
        : { version: before.version, snapshotId: before.snapshotId };
      expect(await servedVersion(s.runtime)).toEqual(serving);
      expect(status.servingSnapshotId).toBe(serving.snapshotId);
      expect(status.lastError?.code).toBe(bad.code);
      // Fallback refuses every candidate in turn: the last error is about the last one (the good one).
      const lastRefused =
        behaviour === 'fallback' && !bad.fallsBack
          ? broken.expected.replace(`Snapshot ${broken.snapshotId} `, `Snapshot ${good.snapshotId} `)
          : broken.expected;
      expect(status.lastError?.message).toContain(lastRefused);
      expect(errors.find((e) => e.snapshotId === broken?.snapshotId)).toMatchObject({ code: bad.code });

      // Refusals before download never fetch the object; the others fetch it and delete the temporary file.
      const gets = aws.requests.count('GET', broken.target);
      if (bad.downloads) expect(gets).toBeGreaterThan(0);
      else expect(gets).toBe(0);
      expect(await temporaries(s.dataDir)).toEqual([]);

      // Logs.
      const lines = s.logger.since(mark);
      const refusal = lines.find((r) => r.message.includes(broken?.expected ?? '?'));
      expect(refusal?.level).toBe('warn');
      if (behaviour === 'fallback') {
        // The bad current snapshot is skipped for the good one below it, which then loads or not.
        expect(refusal?.message).toMatch(new RegExp(` \\(falling back to snapshot ${good.snapshotId}\\)$`));
      } else if (backsOff) {
        expect(refusal?.message).toMatch(/ \(retrying with backoff\)$/);
      } else {
        expect(refusal?.message).toMatch(new RegExp(` \\(keeping snapshot ${before.snapshotId}\\)$`));
      }
      if (fallsBack) {
        expect(lines.map((r) => r.message)).toContain(
          `Dataset '${DATASET}' fell back to snapshot ${good.snapshotId} because the current snapshot ${broken.snapshotId} could not be loaded`,
        );
      }
      if (behaviour === 'fallback' && !bad.fallsBack) {
        expect(lines).toContainEqual(
          expect.objectContaining({
            level: 'error',
            message: `Snapshot fallback for dataset '${DATASET}' found no loadable snapshot among 2 candidate(s); keeping snapshot ${before.snapshotId}`,
          }),
        );
      }

      // The next check: retry backs off on download-stage failures; otherwise the next interval
      // refuses the same snapshot again (downloading it again only when the refusal needs the bytes).
      if (backsOff) {
        await s.logger.waitFor(
          (r) => r.message.startsWith(`Retrying the snapshot check of dataset '${DATASET}' in `),
          {
            since: mark,
          },
        );
      } else {
        await nextEvent(s.runtime, 'poll', (e) => e.dataset === DATASET && e.result === 'refused');
        expect(s.runtime.status(DATASET).status?.servingSnapshotId).toBe(serving.snapshotId);
        if (!bad.downloads) expect(aws.requests.count('GET', broken.target)).toBe(0);
        expect(s.logger.since(mark).some((r) => r.message.startsWith('Retrying the snapshot check'))).toBe(
          false,
        );
      }

      // Recovery: a good publish on top is swapped in.
      if (bad.restore) await writeMetadata(aws, prefix, saved);
      const swapped = nextEvent(s.runtime, 'swap', (e) => e.dataset === DATASET);
      const fixed = await publish(aws, prefix, await snapshotFile('duckdb', before.version + 3));
      expect((await swapped).to).toBe(fixed.snapshotId);
      state.version = before.version + 3;
      state.snapshotId = fixed.snapshotId;
      expect(await servedVersion(s.runtime)).toEqual({
        version: state.version,
        snapshotId: state.snapshotId,
      });
    });
  },
);
