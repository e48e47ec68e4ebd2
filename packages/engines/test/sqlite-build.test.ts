/**
 * The repository loads the patched better-sqlite3 (pnpm applies patches/), and the check can tell;
 * on a stock module (no `interruptOn`, as npm installs it for an embedder) watching for stops is
 * skipped instead of failing every SQLite query.
 */
import type Database from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import { betterSqlite3Build, watchInterrupts } from '../src/sqlite-interrupt.js';

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
});
