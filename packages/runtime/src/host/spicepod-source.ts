/**
 * Loading a spicepod for `createRuntime()`: from a path (read here, relative params resolve against
 * its folder) or inline (YAML text or an object); the files it names (views' `sql_ref`, TLS files,
 * dotenv files) are read beside it. Config warnings and the errors of refused datasets and views
 * are logged once here; a fatal (pod-level) error — TLS that cannot work among them — throws
 * `ConfigError`.
 */
import { readFile } from 'node:fs/promises';
import { basename, dirname, resolve } from 'node:path';
import {
  ConfigError,
  type ConfigIssue,
  type DatasetConfig,
  loadSpicepod,
  type SpicepodConfig,
  type SpicepodLoad,
  throwIfFatal,
} from '@ferry/core';
import type { Logger } from '../common/logging.js';
import { spicepodFileReader } from '../spicepod-files.js';
import { type RuntimeTls, runtimeTls } from '../tls.js';

/** A spicepod given inline: YAML (or JSON) text, or the parsed object. */
export interface SpicepodSource {
  readonly yaml?: string;
  readonly object?: unknown;
  /** Used in messages; default `spicepod.yaml`. */
  readonly file?: string;
  /** Relative file params and the default data dir resolve against it; default: the working directory. */
  readonly baseDir?: string;
}

/** A loaded spicepod: the valid datasets run, the refused ones are reported by `errors`. */
export interface LoadedSpicepod {
  readonly config: SpicepodConfig;
  readonly datasets: readonly DatasetConfig[];
  readonly errors: readonly ConfigIssue[];
  readonly warnings: readonly ConfigIssue[];
  /** The folder relative paths resolve against. */
  readonly baseDir: string;
  /** `runtime.tls`'s certificate and key, checked to work together. */
  readonly tls: RuntimeTls | undefined;
}

/**
 * What is wrong with an inline source, if anything: it must give the spicepod once, as `yaml` text
 * or as `object`. Without this, `{}` or a number was read as an empty spicepod (and refused for its
 * missing version, kind and name), `null` failed with a bare TypeError, and with both `object` was
 * dropped unsaid.
 */
function sourceProblem(source: unknown): string | undefined {
  const give = 'give the spicepod as a path, { yaml } or { object }';
  if (typeof source !== 'object' || source === null) return `${give} (got ${String(source)})`;
  const { yaml, object } = source as SpicepodSource;
  if (yaml === undefined && object === undefined) return `${give}; the source has neither`;
  if (yaml !== undefined && object !== undefined) return `${give}, not both`;
  if (yaml !== undefined && typeof yaml !== 'string') return 'yaml must be the spicepod as text (a string)';
  return undefined;
}

async function read(
  source: string | SpicepodSource,
  env: Readonly<Record<string, string | undefined>>,
): Promise<{ load: SpicepodLoad; baseDir: string }> {
  let text: string;
  let file: string;
  let baseDir: string;
  if (typeof source !== 'string') {
    const problem = sourceProblem(source);
    if (problem !== undefined) {
      throw new ConfigError('createRuntime', [
        { path: '', message: `createRuntime: ${problem}`, fatal: true },
      ]);
    }
    text = source.yaml ?? JSON.stringify(source.object);
    file = source.file ?? 'spicepod.yaml';
    baseDir = resolve(source.baseDir ?? '.');
  } else {
    const path = resolve(source);
    try {
      text = await readFile(path, 'utf8');
    } catch (error) {
      throw new ConfigError(
        source,
        [
          {
            path: '',
            message: `${source}: cannot read the spicepod (${(error as Error).message}); pass the path of a spicepod.yaml.`,
            fatal: true,
          },
        ],
        { cause: error },
      );
    }
    file = basename(path);
    baseDir = dirname(path);
  }
  return { load: loadSpicepod(text, { file, env, readFile: spicepodFileReader(baseDir) }), baseDir };
}

/** Reads and validates the spicepod, logging its warnings and dataset errors. */
export async function loadSpicepodSource(
  source: string | SpicepodSource,
  env: Readonly<Record<string, string | undefined>>,
  logger: Logger,
): Promise<LoadedSpicepod> {
  const { load, baseDir } = await read(source, env);
  const config = throwIfFatal(load);
  const tls = runtimeTls(config);
  for (const issue of load.warnings) {
    logger.warn({ component: 'config', path: issue.path }, issue.message);
  }
  for (const issue of load.errors) {
    logger.error(
      {
        component: 'config',
        path: issue.path,
        ...(issue.dataset === undefined ? {} : { dataset: issue.dataset }),
        ...(issue.view === undefined ? {} : { view: issue.view }),
      },
      issue.message,
    );
  }
  return { config, datasets: load.datasets, errors: load.errors, warnings: load.warnings, baseDir, tls };
}
