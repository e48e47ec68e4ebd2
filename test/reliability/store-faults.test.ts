/**
 * The fault matrix for a flaky S3, on the wire: a runtime per `bootstrap_on_failure_behavior` reads
 * real fauxqs through the fault proxy while the proxy fails its metadata.json reads and snapshot
 * downloads (500, 503, SlowDown, a reset or a short body mid-stream, a bit flipped in transit, a
 * timeout). Each case checks what keeps serving (query results), what is logged, what the status
 * shows, what the next check does, and that it recovers on its own once the fault is gone.
 */
import { type FaultAction, internalError, serviceUnavailable, slowDown } from '@ferry/test-support';
import { useLocalAws } from '@ferry/test-support/suite';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  type Behaviour,
  BUCKET,
  collect,
  DATASET,
  nextEvent,
  publish,
  type Started,
  servedVersion,
  settledStatus,
  snapshotFile,
  spicepod,
  startRuntime,
  temporaries,
} from './support.js';

const { aws, proxy } = useLocalAws({ buckets: [BUCKET], faultProxy: true });

interface TransientFault {
  readonly name: string;
  readonly fault: FaultAction;
  /** What the error message says about it. */
  readonly reason: RegExp;
}

const TRANSIENT: readonly TransientFault[] = [
  { name: '500 InternalError', fault: internalError, reason: /with HTTP 500 \(InternalError/ },
  { name: '503 ServiceUnavailable', fault: serviceUnavailable, reason: /with HTTP 503 \(ServiceUnavailable/ },
  { name: '503 SlowDown', fault: slowDown, reason: /with HTTP 503 \(SlowDown/ },
  {
    name: 'connection reset mid-body',
    fault: { kind: 'reset', afterBytes: 64 },
    reason: /aborted|ECONNRESET/,
  },
  {
    name: 'truncated body',
    fault: { kind: 'truncate', bytes: 64 },
    reason: /aborted|ended after|premature/i,
  },
];

const RETRY_LINE = new RegExp(`^Retrying the snapshot check of dataset '${DATASET}' in (\\d+) ms$`);

function metadataTarget(prefix: string): string {
  return `${BUCKET}/${prefix}metadata.json`;
}

/** One runtime per behaviour, serving `orders`; `version` is what its rows carry now. */
function chain(behaviour: Behaviour, prefix: string) {
  const state = { started: undefined as Started | undefined, version: 1, snapshotId: 0 };
  beforeAll(async () => {
    const published = await publish(aws, prefix, await snapshotFile('duckdb', 1));
    state.snapshotId = published.snapshotId;
    state.started = await startRuntime(
      spicepod(aws, {
        prefix,
        endpoint: proxy.endpoint,
        behaviour,
        interval: '300ms',
        clientTimeout: '300ms',
      }),
    );
    await state.started.runtime.ready(DATASET, { timeoutMs: 30_000 });
  });
  afterAll(async () => {
    proxy.clear();
    await state.started?.runtime.close();
  });
  return state;
}

function started(state: { started: Started | undefined }): Started {
  if (state.started === undefined) throw new Error('the runtime did not start');
  return state.started;
}

/** The retry line logged since `mark`, with its delay, if any. */
function retryDelay(s: Started, mark: number): number | undefined {
  for (const line of s.logger.since(mark)) {
    const match = RETRY_LINE.exec(line.message);
    if (match !== null) return Number(match[1]);
  }
  return undefined;
}

describe.each(['warn', 'retry', 'fallback'] as const)(
  'flaky S3 under bootstrap_on_failure_behavior: %s',
  (behaviour) => {
    const prefix = `store-faults-${behaviour}/`;
    const state = chain(behaviour, prefix);

    // A failed metadata read is handled alike by warn and fallback: one case shows it for fallback.
    it.each(behaviour === 'fallback' ? TRANSIENT.slice(0, 1) : TRANSIENT)(
      'metadata.json read fails ($name): keeps serving, says why, recovers',
      async ({ fault, reason }) => {
        const s = started(state);
        const mark = s.logger.records.length;
        const errors = collect(s.runtime, 'error');
        const settled = settledStatus(s.runtime, (status) => status.lastPollResult === 'failed');
        proxy.setRules([{ name: 'metadata', method: 'GET', target: metadataTarget(prefix), fault }]);
        const status = await settled;

        // What serves: the snapshot already loaded, untouched.
        expect(await servedVersion(s.runtime)).toEqual({
          version: state.version,
          snapshotId: state.snapshotId,
        });
        // Status.
        expect(status.state).toBe('serving');
        expect(status.servingSnapshotId).toBe(state.snapshotId);
        expect(status.lastError?.code).toBe('ERR_STORE');
        expect(status.lastError?.message).toMatch(reason);
        expect(status.lastError?.message).toContain(`${prefix}metadata.json`);
        expect(errors[0]).toMatchObject({ dataset: DATASET, code: 'ERR_STORE', snapshotId: null });
        // Log: one warning naming the dataset, the object and what happens next.
        const line = s.logger
          .since(mark)
          .find((r) =>
            r.message.startsWith(`Reading the snapshot metadata of dataset '${DATASET}' failed: `),
          );
        expect(line?.level).toBe('warn');
        expect(line?.message).toMatch(reason);
        expect(line?.message).toMatch(
          behaviour === 'retry'
            ? / \(retrying with backoff\)$/
            : new RegExp(` \\(keeping snapshot ${state.snapshotId}\\)$`),
        );
        // Next check: retry backs off (1 s ± 30 %), the others poll again at the interval and fail again.
        if (behaviour === 'retry') {
          await s.logger.waitFor((r) => RETRY_LINE.test(r.message), { since: mark });
          const delay = retryDelay(s, mark) ?? 0;
          expect(delay).toBeGreaterThanOrEqual(700);
          expect(delay).toBeLessThanOrEqual(1300);
        } else {
          await nextEvent(s.runtime, 'poll', (e) => e.result === 'failed');
          expect(retryDelay(s, mark)).toBeUndefined();
        }
        expect(proxy.hits('metadata')).toBeGreaterThan(0);

        // Recovery: the fault goes, a new snapshot is published, the next check swaps it in.
        proxy.clear();
        const swapped = nextEvent(s.runtime, 'swap', (e) => e.dataset === DATASET);
        const published = await publish(aws, prefix, await snapshotFile('duckdb', state.version + 1));
        expect((await swapped).to).toBe(published.snapshotId);
        state.version++;
        state.snapshotId = published.snapshotId;
        expect(await servedVersion(s.runtime)).toEqual({
          version: state.version,
          snapshotId: state.snapshotId,
        });
      },
    );

    const DOWNLOAD: readonly (TransientFault & { readonly codes: readonly string[] })[] = [
      ...TRANSIENT.map((t) => ({
        ...t,
        fault:
          t.fault.kind === 'reset'
            ? { kind: 'reset' as const, afterBytes: 64 * 1024 }
            : t.fault.kind === 'truncate'
              ? { kind: 'truncate' as const, bytes: 64 * 1024 }
              : t.fault,
        codes: ['ERR_STORE', 'ERR_DOWNLOAD_TRUNCATED'],
      })),
      {
        name: 'a bit flipped in transit',
        fault: {
          kind: 'replace',
          body: (original: Uint8Array) => {
            const copy = new Uint8Array(original);
            copy[copy.length >> 1] = (copy[copy.length >> 1] ?? 0) ^ 0x01;
            return copy;
          },
        },
        reason: /checksum mismatch\. expected=[0-9a-f]{64} actual=[0-9a-f]{64}/,
        codes: ['ERR_SNAPSHOT_CHECKSUM_MISMATCH'],
      },
    ];

    it.each(DOWNLOAD)(
      'snapshot download fails ($name): keeps serving, cleans up, retries on the next check',
      async ({ fault, reason, codes }) => {
        const s = started(state);
        const before = { version: state.version, snapshotId: state.snapshotId };
        const mark = s.logger.records.length;
        const errors = collect(s.runtime, 'error');
        const rejection = codes.includes('ERR_SNAPSHOT_CHECKSUM_MISMATCH');
        const settled = settledStatus(
          s.runtime,
          (status) => status.lastPollResult === (rejection ? 'refused' : 'failed'),
        );
        proxy.setRules([{ name: 'download', method: 'GET', target: /\.duckdb$/, fault }]);
        const published = await publish(aws, prefix, await snapshotFile('duckdb', state.version + 1));
        const status = await settled;

        expect(await servedVersion(s.runtime)).toEqual(before);
        expect(status.state).toBe('serving');
        expect(status.servingSnapshotId).toBe(before.snapshotId);
        expect(codes).toContain(status.lastError?.code);
        expect(status.lastError?.message).toMatch(reason);
        expect(status.lastError?.message).toContain(published.key.slice(prefix.length));
        expect(errors[0]).toMatchObject({ dataset: DATASET, snapshotId: published.snapshotId });
        // The temporary download is gone and the live file is untouched.
        expect(await temporaries(s.dataDir)).toEqual([]);

        const lines = s.logger.since(mark).filter((r) => r.level === 'warn' || r.level === 'error');
        const failure = lines.find((r) => reason.test(r.message));
        expect(failure?.level).toBe('warn');
        if (behaviour === 'retry') {
          expect(failure?.message).toMatch(/ \(retrying with backoff\)$/);
          await s.logger.waitFor((r) => RETRY_LINE.test(r.message), { since: mark });
        } else {
          expect(failure?.message).toMatch(new RegExp(` \\(keeping snapshot ${before.snapshotId}\\)$`));
          expect(retryDelay(s, mark)).toBeUndefined();
        }
        if (behaviour === 'fallback') {
          // No older snapshot is newer than the loaded one: nothing to fall back to.
          const summary = rejection
            ? `Snapshot fallback for dataset '${DATASET}' found no loadable snapshot among 1 candidate(s); keeping snapshot ${before.snapshotId}`
            : `Snapshot fallback for dataset '${DATASET}' stopped at snapshot ${published.snapshotId} on an error that is not a snapshot rejection; keeping snapshot ${before.snapshotId}`;
          expect(lines.some((r) => r.level === 'error' && r.message === summary)).toBe(true);
        }

        // The next check reads metadata.json in full again and downloads again; once the fault is gone it swaps.
        const gets = proxy.requests({ method: 'GET', target: published.target }).length;
        const swapped = nextEvent(s.runtime, 'swap', (e) => e.dataset === DATASET);
        if (behaviour !== 'retry')
          await nextEvent(s.runtime, 'poll', (e) => e.result === (rejection ? 'refused' : 'failed'));
        proxy.clear();
        expect((await swapped).to).toBe(published.snapshotId);
        expect(proxy.requests({ method: 'GET', target: published.target }).length).toBeGreaterThan(gets);
        state.version++;
        state.snapshotId = published.snapshotId;
        expect(await servedVersion(s.runtime)).toEqual({
          version: state.version,
          snapshotId: state.snapshotId,
        });
        expect(await temporaries(s.dataDir)).toEqual([]);
      },
    );
    if (behaviour === 'warn') {
      // client_timeout bounds both the wait for an answer and a stalled body.
      it('a metadata.json read slower than client_timeout fails the check instead of waiting', async () => {
        const s = started(state);
        proxy.setRules([
          { method: 'GET', target: metadataTarget(prefix), fault: { kind: 'delay', ms: 2_500 } },
        ]);
        try {
          const polled = await nextEvent(s.runtime, 'poll', () => true, 10_000);
          expect(polled.result).toBe('failed');
          expect(s.runtime.status(DATASET).status?.lastError?.message).toMatch(/TimeoutError/);
        } finally {
          proxy.clear();
        }
      });

      it('a snapshot download slower than client_timeout fails instead of waiting', async () => {
        const s = started(state);
        proxy.setRules([{ method: 'GET', target: /\.duckdb$/, fault: { kind: 'delay', ms: 2_500 } }]);
        try {
          const polled = nextEvent(
            s.runtime,
            'poll',
            (e) => e.result !== 'same' && e.result !== 'unchanged',
            10_000,
          );
          await publish(aws, prefix, await snapshotFile('duckdb', state.version + 1));
          expect((await polled).result).toBe('failed');
        } finally {
          proxy.clear();
        }
      });
    }
  },
);
