/**
 * Whether the better-sqlite3 this process loads is the build Ferry's repository patches
 * (patches/better-sqlite3@12.9.0.patch, applied by pnpm). From npm an embedder gets the stock module,
 * which works, except that a worker ended while it raises an SQLite error (a query past its timeout)
 * aborts the process; the runtime says so once instead of leaving it to be found in production.
 * The patch rewrites the package's install script to build from source, which is what is read here.
 */
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';

/** The install script the patch gives better-sqlite3 (stock: `prebuild-install || node-gyp rebuild --release`). */
const PATCHED_INSTALL = 'node-gyp rebuild --release';

/** `patched`, `stock`, or `unknown` when its package.json cannot be read. */
export function betterSqlite3Build(): 'patched' | 'stock' | 'unknown' {
  try {
    const require = createRequire(import.meta.url);
    const manifest = JSON.parse(readFileSync(require.resolve('better-sqlite3/package.json'), 'utf8')) as {
      scripts?: { install?: string };
    };
    return manifest.scripts?.install === PATCHED_INSTALL ? 'patched' : 'stock';
  } catch {
    return 'unknown';
  }
}
