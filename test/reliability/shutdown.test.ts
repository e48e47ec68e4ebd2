import { useLocalAws } from '@ferry/test-support/suite';
import { describe, expect, it } from 'vitest';
import {
  BUCKET,
  DATASET,
  type EngineName,
  publish,
  servedVersion,
  snapshotFile,
  spicepod,
  startRuntime,
  temporaries,
} from './support.js';

const { aws, proxy } = useLocalAws({ buckets: [BUCKET], faultProxy: true });

describe('close() during a snapshot download', () => {
  it.each(['duckdb', 'sqlite'] as const)(
    '%s: close resolves, the download stops, no temporary file remains, the live file serves on restart',
    async (engine: EngineName) => {
      const prefix = `shutdown-${engine}/`;
      await publish(aws, prefix, await snapshotFile(engine, 1));
      const yaml = spicepod(aws, {
        prefix,
        endpoint: proxy.endpoint,
        interval: '200ms',
        datasets: [{ name: DATASET, engine }],
      });
      const first = await startRuntime(yaml);
      await first.runtime.ready(DATASET);
      expect(await servedVersion(first.runtime)).toMatchObject({ version: 1 });

      // Hold the next snapshot's download until close() has been called.
      let downloading!: () => void;
      const started = new Promise<void>((resolve) => {
        downloading = resolve;
      });
      let release!: () => void;
      const released = new Promise<void>((resolve) => {
        release = resolve;
      });
      proxy.setRules([
        {
          method: 'GET',
          target: new RegExp(`\\.${engine}$`),
          fault: { kind: 'pass' },
          onMatch: async () => {
            downloading();
            await released;
          },
        },
      ]);
      try {
        await publish(aws, prefix, await snapshotFile(engine, 2));
        await started;
        await first.runtime.close();
      } finally {
        release();
        proxy.clear();
      }
      expect(await temporaries(first.dataDir)).toEqual([]);

      // The same data directory serves snapshot 1 at once from its live file.
      const second = await startRuntime(yaml, { dataDir: first.dataDir });
      try {
        await second.runtime.ready(DATASET);
        expect((await servedVersion(second.runtime)).version).toBeGreaterThanOrEqual(1);
      } finally {
        await second.runtime.close();
      }
    },
  );
});
