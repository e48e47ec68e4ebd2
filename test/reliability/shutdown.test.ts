import { mkdir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { useLocalAws } from '@ferry/test-support/suite';
import { describe, expect, it } from 'vitest';
import { runNodeChild } from './node-child.js';
import {
  BUCKET,
  DATASET,
  type EngineName,
  publish,
  servedVersion,
  snapshotFile,
  spicepod,
  startRuntime,
  tempDir,
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

const RUNTIME = fileURLToPath(new URL('../../packages/runtime/dist/index.js', import.meta.url));

describe('close() while the first DuckDB query starts', () => {
  // Found by closing a runtime right after a query was asked: its DuckDB worker was still starting,
  // closed its namespace under the statement being parsed, and the process aborted ('terminate
  // called after throwing an instance of Napi::Error'). In a child: the abort must not be ours.
  it('fails the query with ERR_RUNTIME_CLOSED and the process goes on', { timeout: 120_000 }, async () => {
    const work = await tempDir('ferry-close-starting-');
    try {
      await mkdir(join(work, 'store'));
      const yaml = [
        'version: v1',
        'kind: Spicepod',
        'name: closing',
        'snapshots:',
        `  location: file://${join(work, 'store')}/`,
        'datasets:',
        '  - from: postgres:public.orders',
        '    name: orders',
        '    acceleration:',
        '      engine: duckdb',
        '      mode: file',
        '      refresh_mode: snapshot',
        '      snapshots: enabled',
        '',
      ].join('\n');
      const script = [
        `import { createRuntime } from ${JSON.stringify(RUNTIME)};`,
        'const logger = { debug() {}, info() {}, warn() {}, error() {} };',
        'for (let n = 0; n < 3; n++) {',
        `  const runtime = await createRuntime({ yaml: ${JSON.stringify(yaml)}, baseDir: ${JSON.stringify(work)} },`,
        `    { logger, dataDir: ${JSON.stringify(join(work, 'data'))} });`,
        // Its dataset waits for a first snapshot: close() is then quick, the worker still starting.
        "  await new Promise((resolve) => { const off = runtime.on('state', (event) => { if (event.state === 'waiting') { off(); resolve(); } }); });",
        "  const asked = runtime.query('SELECT 1 AS one').then(() => 'answered', (error) => error.code);",
        '  await runtime.close();',
        '  console.log(await asked);',
        '}',
      ].join('\n');
      const { code, signal, out } = await runNodeChild(script, ['--input-type=module']);
      expect({ code, signal, out }).toEqual({
        code: 0,
        signal: null,
        out: 'ERR_RUNTIME_CLOSED\nERR_RUNTIME_CLOSED\nERR_RUNTIME_CLOSED',
      });
    } finally {
      await rm(work, { recursive: true, force: true });
    }
  });
});
