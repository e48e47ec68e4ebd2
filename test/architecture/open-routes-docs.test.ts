/**
 * The docs agree with the code on what is open without an API key. With keys, the server answers
 * `/health`, `/v1/ready` and the inspector page's static files without one (route.ts `public`;
 * packages/cli/test/serve-auth.test.ts checks it over HTTP); every place that tells a user which
 * routes stay open names all three, and none names fewer.
 */
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));

/** Where a user reads what stays open, and a phrase that locates the statement there. */
const PLACES: readonly (readonly [file: string, anchor: RegExp])[] = [
  ['README.md', /api-key: #[^\n]*/],
  ['packages/cli/README.md', /`--api-key-env NAME`[^\n]*/],
  ['packages/cli/src/commands/serve.ts', /--api-key-env NAME[\s\S]*?accepted beside/],
  ['packages/core/CONFIG.md', /\| `auth\.api-key`[^\n]*/],
  ['packages/server/README.md', /`\/health`, `\/v1\/ready`[\s\S]*?are public/],
];

describe('routes open without an API key, as the docs tell them', () => {
  it.each(PLACES)('%s names /health, /v1/ready and the inspector page’s static files', (file, anchor) => {
    const text = readFileSync(`${ROOT}${file}`, 'utf8');
    const statement = anchor.exec(text)?.[0];
    expect(statement, `${file}: no statement matching ${anchor}`).toBeDefined();
    const flat = (statement as string).replace(/\s+/g, ' ');
    expect(flat).toContain('/health');
    expect(flat).toContain('/v1/ready');
    expect(flat).toMatch(/inspector page's static files/);
  });
});
