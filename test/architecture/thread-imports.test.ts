/**
 * What a dataset thread loads: the module graph of its entry (`packages/runtime/src/dataset/thread.ts`),
 * walked on the sources as TypeScript emits them (`import type` is erased; with
 * `verbatimModuleSyntax`, every other import stays, `import { type X }` included), must not reach
 * the S3 SDK, an engine, the YAML parser or Arrow. One thread per dataset: each module it loads costs
 * memory in every one of them (docs/threads.md). Nor may a query thread's (one per core) reach the
 * AWS SDK. Packages outside the repository are followed through their declared dependencies.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const FORBIDDEN = [/^@aws-sdk\//, /^@smithy\//, /^@duckdb\//, /^better-sqlite3$/, /^yaml$/, /^apache-arrow$/];

/**
 * The specifiers a module imports at run time: static, re-exports, side-effect and dynamic imports,
 * and `require('x')` (how `engines/src/duckdb-node.ts` loads DuckDB's CommonJS packages at its top
 * level). A loader that waits for first use calls `createRequire(…)('x')` inside a function
 * (`engines/src/duckdb-api.ts`) and is not counted: `runtime/test/thread-modules.test.ts` checks at
 * run time that the SQLite worker loads no DuckDB module.
 */
export function runtimeImports(source: string): string[] {
  const found: string[] = [];
  // Comments may mention imports; strip them first (line and block comments, not inside strings we care about).
  const text = source.replace(/\/\*[\s\S]*?\*\//g, '').replace(/(^|[^:'"])\/\/.*$/gm, '$1');
  const patterns = [
    /(?:^|[;\s])import\s+(?!type\s)(?:[^'";]*?\sfrom\s*)?['"]([^'"]+)['"]/g,
    /(?:^|[;\s])export\s+(?!type\s)[^'";]*?\sfrom\s*['"]([^'"]+)['"]/g,
    /\bimport\s*\(\s*['"]([^'"]+)['"]\s*\)/g,
    /(?:^|[^.\w])require\s*\(\s*['"]([^'"]+)['"]\s*\)/g,
  ];
  for (const pattern of patterns) {
    for (const match of text.matchAll(pattern)) found.push(match[1] as string);
  }
  return found;
}

interface PackageJson {
  readonly name?: string;
  readonly exports?: Record<string, { readonly default?: string } | string>;
  readonly dependencies?: Record<string, string>;
}

function readJson(path: string): PackageJson {
  return JSON.parse(readFileSync(path, 'utf8')) as PackageJson;
}

/** A `@ferry/x[/sub]` specifier → the source file its export points at (`dist/y.js` → `src/y.ts`). */
function workspaceSource(specifier: string): string {
  const [, name, sub] = /^@ferry\/([a-z-]+)(\/.*)?$/.exec(specifier) ?? [];
  const dir = join(ROOT, 'packages', name as string);
  const entry = readJson(join(dir, 'package.json')).exports?.[sub === undefined ? '.' : `.${sub}`];
  const target = typeof entry === 'string' ? entry : entry?.default;
  if (target === undefined) throw new Error(`${specifier} is not exported by packages/${name}`);
  return join(dir, target.replace(/^\.\/dist\//, 'src/').replace(/\.js$/, '.ts'));
}

/** The bare package name of a specifier (`@scope/name/sub` → `@scope/name`). */
function packageName(specifier: string): string {
  const parts = specifier.split('/');
  return specifier.startsWith('@') ? `${parts[0]}/${parts[1]}` : (parts[0] as string);
}

/** Every external package the graph of `entry` loads, with the chain of modules that leads to it. */
function externalPackages(entry: string): Map<string, string[]> {
  const packages = new Map<string, string[]>();
  const seen = new Set<string>();
  const visit = (file: string, chain: string[]): void => {
    if (seen.has(file)) return;
    seen.add(file);
    const here = [...chain, file.replace(ROOT, '')];
    for (const specifier of runtimeImports(readFileSync(file, 'utf8'))) {
      if (specifier.startsWith('node:')) continue;
      if (specifier.startsWith('.')) {
        visit(resolve(dirname(file), specifier.replace(/\.js$/, '.ts')), here);
      } else if (specifier.startsWith('@ferry/')) {
        visit(workspaceSource(specifier), here);
      } else {
        addPackage(packageName(specifier), here, dirname(file));
      }
    }
  };
  const addPackage = (name: string, chain: string[], from: string): void => {
    if (packages.has(name)) return;
    packages.set(name, [...chain, name]);
    // Follow its own dependencies (it loads them, or may).
    let dir = from;
    while (!existsSync(join(dir, 'node_modules', name, 'package.json')) && dirname(dir) !== dir)
      dir = dirname(dir);
    const manifest = join(dir, 'node_modules', name, 'package.json');
    if (!existsSync(manifest)) return;
    for (const dependency of Object.keys(readJson(manifest).dependencies ?? {})) {
      addPackage(dependency, [...chain, name], dirname(manifest));
    }
  };
  visit(entry, []);
  return packages;
}

describe('a dataset thread loads only its actor', () => {
  it('reads imports as TypeScript emits them', () => {
    expect(
      runtimeImports(
        [
          "import type { A } from 'erased';",
          "import { type B } from 'kept-empty';",
          "import { c, type D } from 'kept';",
          "export { e } from 're-exported';",
          "export type { F } from 'erased-too';",
          "import 'side-effect';",
          "const g = await import('dynamic');",
          "// import { h } from 'in-a-comment';",
          "export const i = require('required') as I;",
          "api ??= createRequire(import.meta.url)('on-first-use');",
        ].join('\n'),
      ).sort(),
    ).toEqual(['dynamic', 'kept', 'kept-empty', 're-exported', 'required', 'side-effect']);
  });

  it('one naming rule for thread entries: each Worker starts a `thread.ts` (in query/, `<engine>-thread.ts`) in its thread folder', () => {
    const src = join(ROOT, 'packages/runtime/src');
    const files = readdirSync(src, { recursive: true, encoding: 'utf8' }).filter((file) =>
      file.endsWith('.ts'),
    );
    const started = new Set(
      files.flatMap((file) =>
        [...readFileSync(join(src, file), 'utf8').matchAll(/threadFile\('([^']+)'\)/g)].map(
          (match) => `${match[1]}.ts`,
        ),
      ),
    );
    const named = files.filter((file) => /(^|[/-])thread\.ts$/.test(file)).sort();
    expect([...started].sort()).toEqual(named);
    expect(named).toEqual([
      'coordinator/thread.ts',
      'dataset/thread.ts',
      'query/duckdb-thread.ts',
      'query/sqlite-thread.ts',
      'snapshot-pool/thread.ts',
    ]);
  });

  it('the dataset-thread entry reaches no S3 SDK, engine, YAML parser or Arrow', () => {
    const packages = externalPackages(join(ROOT, 'packages/runtime/src/dataset/thread.ts'));
    const forbidden = [...packages].filter(([name]) => FORBIDDEN.some((pattern) => pattern.test(name)));
    expect(
      forbidden.map(([, chain]) => chain.join(' → ')),
      'a module the dataset thread loads imports a heavy package',
    ).toEqual([]);
    // What it does load: the machine's library (and comlink for the control plane, if used).
    expect([...packages.keys()]).toContain('xstate');
  });

  it.each(['query/sqlite-thread.ts', 'query/duckdb-thread.ts'])(
    "the query thread %s reaches no AWS SDK (the store is the dataset side's)",
    (entry) => {
      const packages = externalPackages(join(ROOT, 'packages/runtime/src', entry));
      const sdk = [...packages].filter(([name]) => /^@aws-sdk\/|^@smithy\//.test(name));
      expect(
        sdk.map(([, chain]) => chain.join(' → ')),
        'a module a query thread loads imports the AWS SDK (~100 ms and ~8 MB of heap per thread)',
      ).toEqual([]);
      expect([...packages.keys()]).toContain('better-sqlite3');
    },
  );

  it.each(['query/sqlite-thread.ts', 'index.ts'])(
    '%s (the SQLite query thread; the host) reaches none of DuckDB: its node-api is ~0.5 s of CPU for each thread that loads it',
    (entry) => {
      const packages = externalPackages(join(ROOT, 'packages/runtime/src', entry));
      const duckdb = [...packages].filter(([name]) => /^@duckdb\//.test(name));
      expect(
        duckdb.map(([, chain]) => chain.join(' → ')),
        'a module it loads imports DuckDB (engines/src/duckdb-api.ts loads it when needed)',
      ).toEqual([]);
      expect([...packages.keys()]).toContain('better-sqlite3');
    },
  );

  it.each([
    'coordinator/thread.ts',
    'query/duckdb-thread.ts',
    'query/sqlite-thread.ts',
    'snapshot-pool/thread.ts',
  ])(
    "%s reaches neither XState nor the YAML parser: the machine's chart is a dataset thread's, the spicepod loader the host's",
    (entry) => {
      const packages = externalPackages(join(ROOT, 'packages/runtime/src', entry));
      const heavy = [...packages].filter(([name]) => name === 'xstate' || name === 'yaml');
      expect(
        heavy.map(([, chain]) => chain.join(' → ')),
        'a module it loads imports `@ferry/core` or `@ferry/core/machine` (import `@ferry/core/base` or `/common`)',
      ).toEqual([]);
    },
  );

  it('the check can fail: the host reaches both (the spicepod loader is in `@ferry/core`, with the chart)', () => {
    const packages = externalPackages(join(ROOT, 'packages/runtime/src/index.ts'));
    expect([...packages.keys()]).toEqual(expect.arrayContaining(['xstate', 'yaml']));
  });

  it('the check can fail: the DuckDB query thread reaches DuckDB', () => {
    const packages = externalPackages(join(ROOT, 'packages/runtime/src/query/duckdb-thread.ts'));
    expect([...packages.keys()]).toContain('@duckdb/node-api');
  });

  it('the check can fail: the snapshot pool worker reaches the SDK and the engines', () => {
    const packages = externalPackages(join(ROOT, 'packages/runtime/src/snapshot-pool/thread.ts'));
    expect([...packages.keys()]).toEqual(expect.arrayContaining(['@aws-sdk/client-s3', '@duckdb/node-api']));
  });
});
