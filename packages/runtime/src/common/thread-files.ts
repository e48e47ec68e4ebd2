/**
 * Where a thread's entry file is, and which build it belongs to. Each thread has a folder of the
 * package (`coordinator/`, `dataset/`, `snapshot-pool/`, `query/`), and the file a Worker starts is
 * its `thread.ts` (in `query/`, one per engine: `duckdb-thread.ts`, `sqlite-thread.ts`); no other
 * file's name ends in `thread.ts`. Threads always run built JavaScript: in this module's own tree
 * when it is itself built (the host and its threads are one build), or in the package's `dist/`
 * when this module was loaded from sources (tests, a development checkout). Then `dist/` must have been built from these very sources: every `src/**\/*.ts` is
 * compared, once per process, with the source text its `dist/` source map carries
 * (`inlineSources`), and a difference stops the start with an error naming the file and the fix.
 *
 * The build id a thread is started with (`buildIdOf`) names the `dist/` directory it must run
 * from (the root its thread folders are in); each thread checks it against its own location when it
 * starts (`checkBuildId`).
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';
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

/** A thread's entry, by its path under the package's root: `coordinator/thread`, `query/duckdb-thread`. */
export function threadFile(name: string): URL {
  const root = new URL('../', import.meta.url);
  const own = new URL(`${name}.js`, root);
  if (existsSync(own)) return own;
  const distRoot = new URL('../dist/', root);
  const built = new URL(`${name}.js`, distRoot);
  if (existsSync(built)) {
    assertBuiltFrom(fileURLToPath(root), fileURLToPath(distRoot));
    return built;
  }
  throw new ThreadFileMissingError(fileURLToPath(own));
}

/** The build id threads are started with: the root (`dist/`) their folders, each with its entry, are in. */
export function buildIdOf(entry: URL): string {
  return `dist:${dirname(dirname(fileURLToPath(entry)))}`;
}

/** In a thread: refuses to run when started with the build id of another `dist/` than its own. */
export function checkBuildId(buildId: string, self: string): void {
  const own = buildIdOf(new URL(self));
  if (buildId !== own) {
    throw new StaleBuildError(fileURLToPath(self), `the host's threads (${buildId.replace(/^dist:/, '')})`);
  }
}

/**
 * The Node options every thread of Ferry starts with, spread into a `Worker`'s or a piscina pool's
 * options. No `execArgv`, the usual answer, lets a thread inherit the process's options as Node copies them, V8
 * flags included: a runtime started as `node --max-old-space-size=4096 …` or `node --trace-gc …`
 * must start its threads, and an explicit `execArgv` carrying a V8 flag is refused
 * (`ERR_WORKER_INVALID_EXEC_ARGV`). Only a process started with `--input-type` (a script run as
 * `node --input-type=module -e '…'`) passes a list: its options less `--input-type`, which a thread
 * refuses (`ERR_INPUT_TYPE_NOT_ALLOWED`) and dies of at once, and less the flags a thread refuses
 * (found once, by the error of a thread that is never started).
 */
export function threadExecArgv(): { execArgv?: string[] } {
  if (!process.execArgv.some(isInputType)) return {};
  explicitExecArgv ??= acceptedByThreads(withoutInputType(process.execArgv));
  return { execArgv: explicitExecArgv };
}

let explicitExecArgv: string[] | undefined;

function isInputType(arg: string): boolean {
  return arg === '--input-type' || arg.startsWith('--input-type=');
}

function withoutInputType(args: readonly string[]): string[] {
  const kept: string[] = [];
  for (let index = 0; index < args.length; index++) {
    const arg = args[index] as string;
    if (arg === '--input-type') index++;
    else if (!isInputType(arg)) kept.push(arg);
  }
  return kept;
}

/** `args` less what `new Worker` refuses: its error lists them (`…invalid execArgv flags: --a, --b`). */
function acceptedByThreads(args: string[]): string[] {
  try {
    void new Worker('', { eval: true, execArgv: args }).terminate();
    return args;
  } catch (error) {
    if ((error as { code?: unknown }).code !== 'ERR_WORKER_INVALID_EXEC_ARGV') throw error;
    const listed = /flags: (.*)$/.exec((error as Error).message)?.[1]?.split(', ') ?? [];
    const refused = new Set(listed);
    const kept = args.filter((arg) => !refused.has(arg));
    return kept.length < args.length ? acceptedByThreads(kept) : [];
  }
}
