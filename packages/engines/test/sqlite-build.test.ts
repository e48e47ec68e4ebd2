/**
 * The repository loads the patched better-sqlite3 (pnpm applies patches/), and the check can tell;
 * on a stock module (no `interruptOn`, as npm installs it for an embedder) watching for stops is
 * skipped instead of failing every SQLite query. A native module this Node.js cannot load is said
 * once, with the fix, as `SqliteBindingError`.
 */
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type Database from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import { SqliteBindingError } from '../src/errors.js';
import {
  betterSqlite3Build,
  bindingProblem,
  checkSqliteBinding,
  watchInterrupts,
} from '../src/sqlite-interrupt.js';
import { makeTempDir } from './files.js';

describe('better-sqlite3 build', () => {
  it('says patched for the build pnpm made from patches/better-sqlite3@12.9.0.patch', () => {
    expect(betterSqlite3Build()).toBe('patched');
  });

  it('skips watching for stops on a module without interruptOn', () => {
    const stock = {} as Database.Database;
    const region = { buffer: new SharedArrayBuffer(64), offset: 0, stops: 4 };
    expect(() => watchInterrupts(stock, region)).not.toThrow();
    expect(() => watchInterrupts(stock, undefined)).not.toThrow();
  });

  it('loads the installed native module', () => {
    expect(() => checkSqliteBinding()).not.toThrow();
  });

  it('says a native module this Node.js cannot load is one to rebuild, with the reason', async () => {
    const { dir, remove } = await makeTempDir();
    const broken = join(dir, 'better_sqlite3.node');
    await writeFile(broken, 'not a shared object');
    let thrown: unknown;
    try {
      checkSqliteBinding(broken);
    } catch (error) {
      thrown = error;
    } finally {
      await remove();
    }
    expect(thrown).toBeInstanceOf(SqliteBindingError);
    expect(thrown).toMatchObject({ code: 'ERR_SQLITE_BINDING' });
    expect((thrown as Error).message).toMatch(
      new RegExp(
        `^better-sqlite3's native module cannot be loaded by Node\\.js ${process.version.replaceAll('.', '\\.')} \\(.*${broken.replaceAll('.', '\\.')}.*\\); rebuild it for this Node\\.js \\(pnpm rebuild better-sqlite3, or npm rebuild better-sqlite3\\) or run Ferry with the Node\\.js it was installed with$`,
      ),
    );
  });

  it("reads the two ABI versions from Node's message for a module built for another Node.js", () => {
    // Node 22's words for a module built by Node 20 (seen running `ferry serve` so).
    const node22 =
      "The module '/x/better_sqlite3.node'\nwas compiled against a different Node.js version using\nNODE_MODULE_VERSION 115. This version of Node.js requires\nNODE_MODULE_VERSION 127. Please try re-compiling or re-installing\nthe module (for instance, using `npm rebuild` or `npm install`).";
    expect(bindingProblem(node22)).toBe(
      'it was built for NODE_MODULE_VERSION 115, and this Node.js needs 127',
    );
    expect(bindingProblem("Module did not self-register: '/x/better_sqlite3.node'.")).toBe(
      "Module did not self-register: '/x/better_sqlite3.node'.",
    );
  });
});
