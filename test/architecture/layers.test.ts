/**
 * The dependency direction of the packages, checked on the repository itself: every package's
 * runtime dependencies (and every `@ferry/*` its sources import) sit in a strictly lower layer, so
 * no package imports one above it or a sibling adapter. Tests may import anything (devDependencies).
 *
 *   core ← store, engines (sibling adapters) ← snapshots (the swap layer) ← runtime, writer
 *        ← server, flight (front ends) ← cli;  local-aws and test-support are tooling.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const PACKAGES = fileURLToPath(new URL('../../packages/', import.meta.url));

/** The layer of each package; a runtime dependency must be in a lower one. */
const LAYER: Readonly<Record<string, number>> = {
  '@ferry/core': 0,
  '@ferry/local-aws': 0,
  '@ferry/store': 1,
  '@ferry/engines': 1,
  '@ferry/test-support': 1,
  '@ferry/snapshots': 2,
  '@ferry/runtime': 3,
  '@ferry/writer': 3,
  '@ferry/server': 4,
  '@ferry/flight': 4,
  '@ferry/cli': 5,
};

interface Manifest {
  readonly name: string;
  readonly dependencies?: Record<string, string>;
}

const packages = readdirSync(PACKAGES, { withFileTypes: true })
  .filter((entry) => entry.isDirectory())
  .map((entry) => {
    const dir = join(PACKAGES, entry.name);
    const manifest = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as Manifest;
    return { dir, manifest };
  });

/** `@ferry/*` names imported by the files under `dir/src` (static and dynamic imports). */
function sourceImports(dir: string): Set<string> {
  const found = new Set<string>();
  const files = readdirSync(join(dir, 'src'), { recursive: true, withFileTypes: true }).filter(
    (entry) => entry.isFile() && /\.(ts|js|mjs)$/.test(entry.name),
  );
  for (const file of files) {
    const text = readFileSync(join(file.parentPath, file.name), 'utf8');
    for (const match of text.matchAll(/(?:from|import)\s*\(?\s*'(@ferry\/[a-z-]+)/g))
      found.add(match[1] as string);
  }
  return found;
}

describe('package layers', () => {
  it('knows every package', () => {
    expect(packages.map((p) => p.manifest.name).sort()).toEqual(Object.keys(LAYER).sort());
  });

  it.each(packages.map((p) => [p.manifest.name, p] as const))(
    '%s depends only on packages of lower layers, and its sources import only what it declares',
    (name, { dir, manifest }) => {
      const layer = LAYER[name] as number;
      const declared = Object.keys(manifest.dependencies ?? {}).filter((dep) => dep.startsWith('@ferry/'));
      const upward = declared.filter((dep) => (LAYER[dep] ?? Number.POSITIVE_INFINITY) >= layer);
      expect(upward, `${name} (layer ${layer}) depends on a package of its own layer or above`).toEqual([]);
      const undeclared = [...sourceImports(dir)].filter((dep) => dep !== name && !declared.includes(dep));
      expect(undeclared, `${name}'s sources import packages it does not declare as dependencies`).toEqual([]);
    },
  );

  it('the adapters never import each other, and nothing but tests and tools imports the test harness', () => {
    const deps = (name: string) =>
      Object.keys(packages.find((p) => p.manifest.name === name)?.manifest.dependencies ?? {});
    expect(deps('@ferry/store')).not.toContain('@ferry/engines');
    expect(deps('@ferry/engines')).not.toContain('@ferry/store');
    for (const { manifest } of packages) {
      expect(Object.keys(manifest.dependencies ?? {}), manifest.name).not.toContain('@ferry/test-support');
    }
  });
});
