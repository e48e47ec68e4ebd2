/** The repository loads the patched better-sqlite3 (pnpm applies patches/), and the check can tell. */
import { describe, expect, it } from 'vitest';
import { betterSqlite3Build } from '../src/sqlite-build.js';

describe('betterSqlite3Build', () => {
  it('says patched for the build pnpm made from patches/better-sqlite3@12.9.0.patch', () => {
    expect(betterSqlite3Build()).toBe('patched');
  });
});
