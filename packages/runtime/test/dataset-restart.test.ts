/**
 * A dataset thread that dies while a snapshot task it started still runs in the pool (killed at
 * once, as its heap limit would end it: an uncaught error waits up to 10 s for the thread's work
 * first): the coordinator starts the next thread only once that task has ended, so two threads of
 * one dataset never work on its live file at once. The pool cannot stop every such task: a load
 * that has begun its commit finishes it (the rename over the live file, the manifest's promotion,
 * the generation link), and a restore, a prune or a request to the store runs to its end, while a
 * new thread's restore reads, rewrites and removes the same files. The orphan here is a load held
 * at its HEAD by the fault proxy: its port's closing aborts it only at its next check.
 */
import { readdir, readFile, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { startFaultProxy } from '@ferry/test-support';
import { describe, expect, it } from 'vitest';
import { createRuntime, memoryLogger } from '../src/index.js';
import { killDatasetThread, threadYoungGenerations } from '../src/testing.js';
import { BUCKET, nextEvent, publishVersion, spicepod, tempDir, useLocalAws } from './support.js';

const aws = useLocalAws();

describe('a dataset thread that dies while its load runs in the pool', () => {
  it('is started again only once that load has ended; then it swaps in the snapshot itself', async () => {
    const prefix = 'orphan/';
    await publishVersion(aws, 'orphan', 'duckdb', 1, { rows: 5, prefix });
    const proxy = await startFaultProxy(aws.endpoint);
    const dataDir = await tempDir('ferry-orphan-');
    const yaml = spicepod(aws, [{ name: 'orphan', engine: 'duckdb', interval: '1h' }], {
      prefix,
      params: { s3_endpoint: proxy.endpoint },
    });
    // No backoff: nothing but the orphaned task may hold the restart back.
    const logger = memoryLogger();
    const runtime = await createRuntime(
      { yaml, baseDir: dataDir },
      { logger, dataDir, restartBackoffMs: [0] },
    );
    let release = (): void => undefined;
    const gate = new Promise<void>((resolve) => {
      release = resolve;
    });
    try {
      await runtime.ready('orphan', { timeoutMs: 30_000 });
      const published = await publishVersion(aws, 'orphan', 'duckdb', 2, { rows: 5, prefix });
      // The load's HEAD of the new object (its first request) waits for the gate.
      let heading = (): void => undefined;
      const held = new Promise<void>((resolve) => {
        heading = resolve;
      });
      proxy.addRule({
        method: 'HEAD',
        target: new RegExp(`^${BUCKET}/${prefix}`),
        times: 1,
        fault: { kind: 'pass' },
        onMatch: () => {
          heading();
          return gate;
        },
      });
      await runtime.send('orphan', 'poll.now');
      await held;
      const restarting = nextEvent(
        runtime,
        'state',
        (event) => event.dataset === 'orphan' && event.state === 'restarting',
      );
      await killDatasetThread(runtime, 'orphan');
      await restarting;
      // The coordinator decides the restart when the thread exits, before the host hears of it; with
      // no backoff, a thread it starts then is running by the time it answers the host's next request.
      const threads = (await threadYoungGenerations(runtime)).map(({ thread }) => thread);
      expect(threads).not.toContain('dataset orphan');
      expect(logger.records.map((record) => record.message)).toContainEqual(
        expect.stringMatching(
          /^Dataset thread of 'orphan' died \(.*\); restarting it in 0 ms, once the snapshot tasks it started have ended \(1 running\)$/,
        ),
      );

      const swapped = nextEvent(runtime, 'swap', (event) => event.dataset === 'orphan', 30_000);
      release();
      expect((await swapped).to).toBe(published.snapshotId);
      expect((await runtime.query('SELECT max(version) AS v FROM orphan')).rows[0]?.v).toBe(2);
      const files = await readdir(dataDir);
      expect(files.filter((name) => name.includes('.ferry-tmp-') || name.includes('.ferry-next'))).toEqual(
        [],
      );
      const live = files.find((name) => name.startsWith('orphan.') && !name.includes('.ferry'));
      expect(live).toBeDefined();
      const manifest = JSON.parse(await readFile(join(dataDir, `${live}.ferry.json`), 'utf8'));
      expect(manifest.snapshot.snapshotId).toBe(published.snapshotId);
    } finally {
      release();
      await runtime.close();
      await proxy.close();
      await rm(dataDir, { recursive: true, force: true });
    }
  });
});
