/**
 * Where a thread's entry file is, and which build it belongs to. Threads always run built
 * JavaScript: next to this module when it is itself built (the host and its threads are one build),
 * or in the package's `dist/` when this module was loaded from sources (tests, a development
 * checkout). Then `dist/` must have been built from these very sources: every `src/**\/*.ts` is
 * compared, once per process, with the source text its `dist/` source map carries
 * (`inlineSources`), and a difference stops the start with an error naming the file and the fix.
 *
 * The build id a thread is started with (`buildIdOf`) names the `dist/` directory it must run
 * from; each thread checks it against its own location when it starts (`checkBuildId`).
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { StaleBuildError, ThreadFileMissingError } from './thread-errors.js';

let verified: string | undefined;

/** Throws {@link StaleBuildError} for the first source whose `dist/` file was built from other text. */
export function assertBuiltFrom(srcDir: string, distDir: string): void {
  if (verified === distDir) return;
  const sources = readdirSync(srcDir, { recursive: true, withFileTypes: true }).filter(
    (entry) => entry.isFile() && entry.name.endsWith('.ts') && !entry.name.endsWith('.d.ts'),
  );
  for (const entry of sources) {
    const source = join(entry.parentPath, entry.name);
    const rel = relative(srcDir, source).replace(/\.ts$/, '.js');
    const built = join(distDir, rel);
    let inlined: unknown;
    try {
      inlined = (JSON.parse(readFileSync(`${built}.map`, 'utf8')) as { sourcesContent?: unknown[] })
        .sourcesContent?.[0];
    } catch {
      throw new StaleBuildError(built, source);
    }
    if (inlined !== readFileSync(source, 'utf8')) throw new StaleBuildError(built, source);
  }
  verified = distDir;
}

export function threadFile(name: string): URL {
  const sibling = new URL(`./${name}.js`, import.meta.url);
  if (existsSync(sibling)) return sibling;
  const built = new URL(`../dist/${name}.js`, import.meta.url);
  if (existsSync(built)) {
    assertBuiltFrom(fileURLToPath(new URL('.', import.meta.url)), dirname(fileURLToPath(built)));
    return built;
  }
  throw new ThreadFileMissingError(fileURLToPath(sibling));
}

/** The build id threads are started with: the `dist/` directory their entry files are in. */
export function buildIdOf(entry: URL): string {
  return `dist:${dirname(fileURLToPath(entry))}`;
}

/** In a thread: refuses to run when started with the build id of another `dist/` than its own. */
export function checkBuildId(buildId: string, self: string): void {
  const own = buildIdOf(new URL(self));
  if (buildId !== own) {
    throw new StaleBuildError(fileURLToPath(self), `the host's threads (${buildId.replace(/^dist:/, '')})`);
  }
}

/**
 * The Node options every thread of Ferry starts with: the process's, less `--input-type`, which a
 * thread refuses (`ERR_INPUT_TYPE_NOT_ALLOWED`) and which a script run as `node --input-type=module
 * -e '…'` carries; a thread started with it dies at once.
 */
export function threadExecArgv(): string[] {
  const kept: string[] = [];
  const args = process.execArgv;
  for (let index = 0; index < args.length; index++) {
    const arg = args[index] as string;
    if (arg === '--input-type') index++;
    else if (!arg.startsWith('--input-type=')) kept.push(arg);
  }
  return kept;
}
