/**
 * Stopping an SQLite statement from another thread. better-sqlite3 cannot be interrupted, and a
 * worker ended while it runs native code keeps running it (`worker.terminate()` waits for the call
 * to return), so Ferry's patch of better-sqlite3 adds `interruptOn`: a progress handler, called
 * every {@link INTERRUPT_EVERY} virtual machine instructions, that reads an Int32 region of a
 * SharedArrayBuffer, `[current, stop_1 … stop_n]`. The connection's thread writes `current` (the
 * statement running now, 1 … n, or 0) and any thread stops statement k by writing `stop_k`: the
 * statement fails with `SQLITE_INTERRUPT` at the next call, and only that statement (a stop written
 * before k starts still stops it; one written after k ended stops nothing).
 *
 * From npm an embedder gets the stock module, without `interruptOn`: an SQLite statement then cannot
 * be stopped inside SQLite (a query past its timeout or cancelled keeps its worker busy until it
 * ends, and close() waits for it), and a worker ended while it raises an SQLite error aborts the
 * process. {@link betterSqlite3Build} tells the runtime, which says so once instead of leaving it
 * to be found in production.
 */
import Database from 'better-sqlite3';
import { SqliteBindingError } from './errors.js';

/** VM instructions between two looks at the region: about a microsecond of SQLite's time. */
export const INTERRUPT_EVERY = 1_000;

/** Where a connection looks for its stops: Int32 `offset` of `buffer`, `stops` statements long. */
export interface InterruptRegion {
  readonly buffer: SharedArrayBuffer;
  readonly offset: number;
  readonly stops: number;
}

interface Interruptible {
  interruptOn(buffer?: SharedArrayBuffer, offset?: number, stops?: number, every?: number): unknown;
}

/**
 * Whether the better-sqlite3 this process loads is the build Ferry's repository patches
 * (patches/better-sqlite3@12.9.0.patch, applied by pnpm): `patched` when it has `interruptOn`.
 */
export function betterSqlite3Build(): 'patched' | 'stock' {
  return typeof (Database.prototype as { interruptOn?: unknown }).interruptOn === 'function'
    ? 'patched'
    : 'stock';
}

let bindingLoads = false;

/**
 * Throws `SqliteBindingError` when better-sqlite3's native module (`nativeBinding`: that file
 * instead of the installed one) cannot be loaded. It loads at the first connection: built for
 * another Node.js, each SQLite file failed to open one by one, with Node's words ('compiled against
 * a different Node.js version', then 'Module did not self-register') as a bootstrap warning, a 500
 * on each query, or a writer's "fix the SQL".
 */
export function checkSqliteBinding(nativeBinding?: string): void {
  if (nativeBinding === undefined && bindingLoads) return;
  try {
    new Database(':memory:', nativeBinding === undefined ? {} : { nativeBinding }).close();
    bindingLoads ||= nativeBinding === undefined;
  } catch (error) {
    if ((error as { code?: string }).code !== 'ERR_DLOPEN_FAILED') throw error;
    throw new SqliteBindingError(bindingProblem((error as Error).message), { cause: error });
  }
}

/** What Node's dlopen failure says, in a line: the two ABI versions when it names them. */
export function bindingProblem(message: string): string {
  const versions =
    /NODE_MODULE_VERSION (\d+)\. This version of Node\.js requires NODE_MODULE_VERSION (\d+)/.exec(
      message.replace(/\s+/g, ' '),
    );
  if (versions === null) return message.split('\n')[0] as string;
  return `it was built for NODE_MODULE_VERSION ${versions[1]}, and this Node.js needs ${versions[2]}`;
}

/**
 * Makes `db` watch `region` (undefined: watch nothing). On the stock build there is no
 * `interruptOn`: statements then run to their end (the runtime warns once).
 */
export function watchInterrupts(db: Database.Database, region: InterruptRegion | undefined): void {
  const native = db as unknown as Partial<Interruptible>;
  if (native.interruptOn === undefined) return;
  if (region === undefined) native.interruptOn();
  else native.interruptOn(region.buffer, region.offset, region.stops, INTERRUPT_EVERY);
}
