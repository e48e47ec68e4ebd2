/**
 * Faults while nothing is served yet (bootstrap), per `bootstrap_on_failure_behavior`: first the
 * store answers metadata.json with 503s, then (once it answers) the current snapshot is corrupt
 * while an older one is good. Nothing unvalidated is ever served: the dataset waits (queries get
 * `ERR_DATASET_NOT_READY`), says why in its status and log, checks again (retry: with backoff), and
 * `fallback` serves the good older snapshot. A later good publish is picked up by every behaviour.
 */
import { serviceUnavailable } from '@ferry/test-support';
import { useLocalAws } from '@ferry/test-support/suite';
import { describe, expect, it } from 'vitest';
import {
  BUCKET,
  DATASET,
  nextEvent,
  publish,
  servedVersion,
  settledStatus,
  sha256Hex,
  snapshotFile,
  spicepod,
  startRuntime,
  temporaries,
} from './support.js';

const { aws, proxy } = useLocalAws({ buckets: [BUCKET], faultProxy: true });

const RETRYING = `Retrying the snapshot check of dataset '${DATASET}' in `;

describe.each(['warn', 'retry', 'fallback'] as const)('bootstrap under %s', (behaviour) => {
  it('store unreachable, then a corrupt current snapshot: never serves an unvalidated file', async () => {
    const prefix = `bootstrap-${behaviour}/`;
    const good = await publish(aws, prefix, await snapshotFile('duckdb', 1));
    const wrong = sha256Hex('not the snapshot');
    const corrupt = await publish(aws, prefix, await snapshotFile('duckdb', 2), {
      mutate: (entry) => {
        entry['snapshot-checksum'] = wrong;
      },
    });
    proxy.setRules([
      { name: 'down', method: 'GET', target: `${BUCKET}/${prefix}metadata.json`, fault: serviceUnavailable },
    ]);
    const { runtime, logger, dataDir } = await startRuntime(
      spicepod(aws, { prefix, endpoint: proxy.endpoint, behaviour, interval: '300ms' }),
    );
    try {
      // 1. metadata.json answers 503: nothing to serve, the dataset waits and says why.
      let status = await settledStatus(runtime, (st) => st.lastPollResult === 'failed');
      expect(status.state).toBe('waiting');
      expect(status.servingSnapshotId).toBeNull();
      expect(status.lastError).toMatchObject({ code: 'ERR_STORE' });
      expect(status.lastError?.message).toContain('with HTTP 503 (ServiceUnavailable');
      await expect(runtime.query(`SELECT count(*) FROM ${DATASET}`)).rejects.toMatchObject({
        code: 'ERR_DATASET_NOT_READY',
        message: `Dataset '${DATASET}' is not ready (waiting): it has no snapshot loaded yet; retry later or wait with ready('${DATASET}').`,
      });
      // Spice's bootstrap-failure lines: `retry` logs each failure at error, the others warn once per check.
      const failure = logger.records.find((r) => r.message.startsWith('Failed to bootstrap snapshot; '));
      expect(failure?.level).toBe(behaviour === 'retry' ? 'error' : 'warn');
      expect(failure?.message).toMatch(
        new RegExp(
          `^Failed to bootstrap snapshot; ${behaviour === 'retry' ? 'retrying' : 'continuing without a downloaded snapshot'}\\. ` +
            `dataset=${DATASET} location=s3://${BUCKET}/${prefix} error=Store get of .*metadata\\.json failed with HTTP 503`,
        ),
      );
      expect(failure?.fields).toMatchObject({ code: 'ERR_STORE', snapshotId: null });
      if (behaviour === 'retry') await logger.waitFor((r) => r.message.startsWith(RETRYING));
      else await nextEvent(runtime, 'poll', (e) => e.result === 'failed');

      // 2. The store answers; the current snapshot is corrupt, an older one is good.
      const mark = logger.records.length;
      const refusedOrServed = settledStatus(runtime, (st) =>
        behaviour === 'fallback' ? st.servingSnapshotId !== null : st.lastPollResult === 'refused',
      );
      proxy.clear();
      status = await refusedOrServed;
      expect(status.lastError?.code).toBe('ERR_SNAPSHOT_CHECKSUM_MISMATCH');
      expect(status.lastError?.message).toContain(
        `Snapshot ${corrupt.uri} checksum mismatch. expected=${wrong}`,
      );
      expect(await temporaries(dataDir)).toEqual([]);
      const lines = logger.since(mark);
      if (behaviour === 'fallback') {
        expect(status.servingSnapshotId).toBe(good.snapshotId);
        expect(await servedVersion(runtime)).toEqual({ version: 1, snapshotId: good.snapshotId });
        expect(lines.map((r) => r.message)).toContain(
          `Dataset '${DATASET}' fell back to snapshot ${good.snapshotId} because the current snapshot ${corrupt.snapshotId} could not be loaded`,
        );
      } else {
        expect(status.state).toBe('waiting');
        expect(status.servingSnapshotId).toBeNull();
        await expect(runtime.query(`SELECT count(*) FROM ${DATASET}`)).rejects.toMatchObject({
          code: 'ERR_DATASET_NOT_READY',
        });
        const refusal = lines.find((r) => r.message.includes(`Snapshot ${corrupt.uri} checksum mismatch`));
        expect(refusal?.level).toBe(behaviour === 'retry' ? 'error' : 'warn');
        expect(refusal?.message).toBe(
          `Failed to bootstrap snapshot; ${behaviour === 'retry' ? 'retrying' : 'continuing without a downloaded snapshot'}. ` +
            `dataset=${DATASET} location=s3://${BUCKET}/${prefix} error=${status.lastError?.message}`,
        );
        if (behaviour === 'retry')
          await logger.waitFor((r) => r.message.startsWith(RETRYING), { since: mark });
        else await nextEvent(runtime, 'poll', (e) => e.result === 'refused');
      }

      // 3. A good publish is picked up.
      const swapped = nextEvent(runtime, 'swap', (e) => e.dataset === DATASET);
      const fixed = await publish(aws, prefix, await snapshotFile('duckdb', 3));
      expect((await swapped).to).toBe(fixed.snapshotId);
      expect(await servedVersion(runtime)).toEqual({ version: 3, snapshotId: fixed.snapshotId });
    } finally {
      proxy.clear();
      await runtime.close();
    }
  });
});
