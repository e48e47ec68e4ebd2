/**
 * Whether the better-sqlite3 this process loads is the build Ferry's repository patches
 * (patches/better-sqlite3@12.9.0.patch, applied by pnpm). From npm an embedder gets the stock module:
 * it has no `interruptOn`, so an SQLite statement cannot be stopped inside SQLite (a query past its
 * timeout or cancelled keeps its worker busy until it ends, and close() waits for it), and a worker ended
 * while it raises an SQLite error aborts the process. The runtime says so once instead of leaving it
 * to be found in production.
 */
import Database from 'better-sqlite3';

/** `patched` when the loaded module has the patch's `interruptOn`, else `stock`. */
export function betterSqlite3Build(): 'patched' | 'stock' {
  return typeof (Database.prototype as { interruptOn?: unknown }).interruptOn === 'function'
    ? 'patched'
    : 'stock';
}
