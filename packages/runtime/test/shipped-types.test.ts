/**
 * The declarations the embed packages ship (`dist/**\/*.d.ts`, what `npm pack` puts in the tarballs
 * scripts/embed-check.sh installs) type-check in an application: every package they import is a
 * runtime dependency of the package that ships them, and one that brings no types of its own
 * (better-sqlite3) has its `@types/*` package among the runtime dependencies too. A devDependency is
 * not installed for an embedder, so a TypeScript application with `skipLibCheck` off (tsc's
 * default) failed on `@ferry/engines`' declarations: TS7016, no declaration file for 'better-sqlite3'.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const PACKAGES = fileURLToPath(new URL('../../', import.meta.url));
/** What scripts/embed-check.sh packs: @ferry/runtime and what it depends on. */
const EMBED = ['core', 'store', 'engines', 'snapshots', 'runtime'];

interface Manifest {
  readonly name: string;
  readonly types?: string;
  readonly typings?: string;
  readonly exports?: unknown;
  readonly dependencies?: Readonly<Record<string, string>>;
}

const readManifest = (dir: string): Manifest =>
  JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as Manifest;

/** The package names (not `node:` modules, not relative paths) the declarations under `dir` import. */
function declarationImports(dir: string): Set<string> {
  const found = new Set<string>();
  const files = readdirSync(dir, { recursive: true, withFileTypes: true }).filter(
    (entry) => entry.isFile() && entry.name.endsWith('.d.ts'),
  );
  for (const file of files) {
    const text = readFileSync(join(file.parentPath, file.name), 'utf8');
    for (const match of text.matchAll(/(?:from\s*|import\s*\(\s*|require\s*\(\s*)['"]([^'"]+)['"]/g)) {
      const specifier = match[1] as string;
      if (specifier.startsWith('.') || specifier.startsWith('node:')) continue;
      const parts = specifier.split('/');
      found.add(specifier.startsWith('@') ? parts.slice(0, 2).join('/') : (parts[0] as string));
    }
  }
  return found;
}

/** Whether the installed package declares its own types (else they come from `@types/*`). */
function bringsTypes(dir: string): boolean {
  const manifest = readManifest(dir);
  return (
    manifest.types !== undefined ||
    manifest.typings !== undefined ||
    JSON.stringify(manifest.exports ?? null).includes('"types"') ||
    existsSync(join(dir, 'index.d.ts'))
  );
}

const typesPackage = (name: string): string =>
  `@types/${name.startsWith('@') ? name.slice(1).replace('/', '__') : name}`;

describe('shipped declarations', () => {
  it.each(EMBED)('@ferry/%s: every package its .d.ts files import is a dependency with types', (name) => {
    const dir = join(PACKAGES, name);
    const dependencies = readManifest(dir).dependencies ?? {};
    const problems: string[] = [];
    for (const imported of declarationImports(join(dir, 'dist'))) {
      if (dependencies[imported] === undefined) {
        problems.push(`${imported} is not a dependency`);
        continue;
      }
      if (imported.startsWith('@ferry/')) continue;
      const types = typesPackage(imported);
      if (!bringsTypes(join(dir, 'node_modules', imported)) && dependencies[types] === undefined) {
        problems.push(`${imported} brings no types and ${types} is not a dependency`);
      }
    }
    expect(problems).toEqual([]);
  });
});

/** The names a declaration file imports from the other packages of Ferry. */
function ferryImports(text: string): Set<string> {
  const names = new Set<string>();
  for (const match of text.matchAll(/import (?:type )?\{([^}]*)\} from '@ferry\/[^']+'/g)) {
    for (const name of (match[1] as string).split(',')) names.add(name.replace(/\btype\b/, '').trim());
  }
  names.delete('');
  return names;
}

describe('the types of the embed API', () => {
  it('exports from @ferry/runtime every type its public signatures use from another package of Ferry', async () => {
    // An application whose package manager installs only its direct dependencies (pnpm) cannot
    // import @ferry/core to name `JsonValue` (a query's params) or `SpicepodConfig` (`runtime.config`).
    const ts = (await import('typescript')).default;
    const dist = join(PACKAGES, 'runtime', 'dist');
    const program = ts.createProgram([join(dist, 'index.d.ts')], { strict: true, skipLibCheck: true });
    const checker = program.getTypeChecker();
    const entry = program.getSourceFile(join(dist, 'index.d.ts'));
    const entrySymbol = entry === undefined ? undefined : checker.getSymbolAtLocation(entry);
    if (entrySymbol === undefined) throw new Error('no declarations of @ferry/runtime; build it first');
    const exported = new Set(checker.getExportsOfModule(entrySymbol).map((symbol) => symbol.name));
    // api.ts holds the embed API's types; of the protocol's, index.ts exports InspectionEvent.
    const used = ferryImports(readFileSync(join(dist, 'api.d.ts'), 'utf8'));
    const protocol = readFileSync(join(dist, 'common', 'protocol.d.ts'), 'utf8');
    const inspection = protocol.match(/export interface InspectionEvent \{[^}]*\}/)?.[0] ?? '';
    for (const name of ferryImports(protocol))
      if (new RegExp(`\\b${name}\\b`).test(inspection)) used.add(name);
    expect([...used].filter((name) => !exported.has(name)).sort()).toEqual([]);
  });
});
