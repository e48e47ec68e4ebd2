/**
 * Vitest global setup of the integration and reliability projects: runs the incremental build
 * (`tsc -b` of every package) before any test, because worker threads, the SQLite read pool, child
 * processes and `@ferry/*` imports load each package's built `dist/`. Without it a run after editing
 * `src` would silently test the old code. Up to date it costs about half a second; a type error in a
 * package fails the run with the compiler's output.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

/** Every package's own (source) project: `packages/<name>/tsconfig.json`. */
function packageProjects(): string[] {
  const packages = join(ROOT, 'packages');
  return readdirSync(packages, { withFileTypes: true })
    .filter((entry) => entry.isDirectory() && existsSync(join(packages, entry.name, 'tsconfig.json')))
    .map((entry) => join('packages', entry.name))
    .sort();
}

export default function setup(): void {
  const tsc = createRequire(join(ROOT, 'package.json')).resolve('typescript/bin/tsc');
  const started = Date.now();
  const result = spawnSync(process.execPath, [tsc, '-b', ...packageProjects()], {
    cwd: ROOT,
    encoding: 'utf8',
  });
  if (result.status !== 0) {
    throw new Error(
      `The build before the tests failed (tsc -b, exit ${result.status ?? result.signal}); fix it and run again:\n${result.stdout}${result.stderr}`,
    );
  }
  if (process.env.CI === 'true') process.stdout.write(`built packages in ${Date.now() - started} ms\n`);
}
