/**
 * Test projects. `unit`: pure tests and tests of one component on real files, no server,
 * thread or child `ferry` (`pnpm test:unit`, no build needed: `@ferry/*` resolve to sources).
 * `integration`: everything else under packages/*\/test (local S3 + SQS, worker threads, the built
 * CLI). `reliability`: test/reliability (faults, hostile input). `integration-alone` and
 * `reliability-alone`: the files of each that measure memory, thread priority, back-pressure or
 * admission bounds, the browser test, the protocol differential (its HTTP JSON test failed once at
 * two files at a time, and once before under heavy load; cause not known) and the crash loop, which
 * must not share the machine with another file. All but `unit` build the packages first
 * (test/support/build-packages.ts), since threads and child processes run `dist/`.
 * `unit` runs its files in shared worker threads (no per-file isolation): its tests keep no global
 * state, and that takes the run from ~20 s to ~5 s on two cores.
 * The projects run one after another (`groupOrder`). Vitest's default on two cores is one file at a
 * time; `integration` and `reliability` run two files at a time, since most of their time is spent
 * waiting on child processes, sockets and timers: on one (slow) two-core machine that took the whole
 * run from ~1,950 s to 1,445–1,590 s, the run then using 175 % of one core. `pnpm test:integration` and
 * `pnpm test:reliability` run both projects of their kind (`--project 'integration*'`).
 */
import { fileURLToPath } from 'node:url';
import { configDefaults, defineConfig } from 'vitest/config';

const UNIT = [
  'packages/core/test/**/*.test.ts',
  'packages/engines/test/**/*.test.ts',
  'packages/cli/test/parts.test.ts',
  'packages/cli/test/work-dir.test.ts',
  'packages/local-aws/test/s3-events.test.ts',
  'packages/runtime/test/memory-return.test.ts',
  'packages/store/test/file-store.test.ts',
  'packages/store/test/read-parallel.test.ts',
  'packages/store/test/block-digests.test.ts',
  'packages/test-support/test/fixture-store.test.ts',
  'packages/test-support/test/waiting.test.ts',
  'packages/writer/test/build.test.ts',
  'test/architecture/**/*.test.ts',
  'bench/test/**/*.test.ts',
];
/** Files that must not share the machine with another file (see above). */
const ALONE = {
  integration: [
    'packages/runtime/test/thread-priority.test.ts',
    'packages/runtime/test/thread-heaps.test.ts',
    'packages/flight/test/stream.test.ts',
    'packages/flight/test/differential.test.ts',
    'packages/server/test/inspector-page.test.ts',
  ],
  reliability: [
    'test/reliability/crash-safety.test.ts',
    'test/reliability/runaway-queries.test.ts',
    'test/reliability/overload.test.ts',
    'test/reliability/sqlite-termination.test.ts',
  ],
};
const BUILD_FIRST = ['./test/support/build-packages.ts'];

export default defineConfig({
  test: {
    testTimeout: 60_000,
    hookTimeout: 60_000,
    pool: 'forks',
    reporters: ['default', './test/support/summary-reporter.ts'],
    env: { AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true' },
    projects: [
      {
        extends: true,
        resolve: {
          alias: [
            {
              find: /^@ferry\/([a-z-]+)$/,
              replacement: fileURLToPath(new URL('./packages/$1/src/index.ts', import.meta.url)),
            },
            // Subpath entries (`@ferry/engines/namespaces`) too, so no built copy loads beside the sources.
            {
              find: /^@ferry\/([a-z-]+)\/([a-z-]+)$/,
              replacement: fileURLToPath(new URL('./packages/$1/src/$2.ts', import.meta.url)),
            },
          ],
        },
        test: { name: 'unit', include: UNIT, pool: 'threads', isolate: false, sequence: { groupOrder: 0 } },
      },
      {
        extends: true,
        test: {
          name: 'integration',
          include: ['packages/*/test/**/*.test.ts', 'test/spice-page/**/*.test.ts'],
          exclude: [...configDefaults.exclude, ...UNIT, ...ALONE.integration],
          globalSetup: BUILD_FIRST,
          maxWorkers: 2,
          sequence: { groupOrder: 1 },
        },
      },
      {
        extends: true,
        test: {
          name: 'reliability',
          include: ['test/reliability/**/*.test.ts'],
          exclude: [...configDefaults.exclude, ...ALONE.reliability],
          globalSetup: BUILD_FIRST,
          maxWorkers: 2,
          sequence: { groupOrder: 2 },
        },
      },
      {
        extends: true,
        test: {
          name: 'integration-alone',
          include: ALONE.integration,
          globalSetup: BUILD_FIRST,
          maxWorkers: 1,
          sequence: { groupOrder: 3 },
        },
      },
      {
        extends: true,
        test: {
          name: 'reliability-alone',
          include: ALONE.reliability,
          globalSetup: BUILD_FIRST,
          maxWorkers: 1,
          sequence: { groupOrder: 4 },
        },
      },
    ],
  },
});
