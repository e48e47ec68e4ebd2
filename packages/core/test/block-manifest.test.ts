/**
 * The block manifest's pure part: layouts, the sidecar's validation against the snapshot entry,
 * and the delta plan (which bytes are copied, which fetched, coalesced), checked on small made-up
 * digests. A plan must always cover the new file exactly once.
 */
import { describe, expect, it } from 'vitest';
import {
  type BlockManifest,
  blockCount,
  blockLayoutFor,
  blockManifestKey,
  blockRange,
  type DeltaPlan,
  parseBlockManifest,
  planDelta,
  serializeBlockManifest,
} from '../src/index.js';

const CHECKSUM = 'a'.repeat(64);
const digest = (n: number | string): string => String(n).padStart(64, '0');

function manifest(
  blocks: readonly (number | string)[],
  layout = { headerSize: 0, blockSize: 10 },
  size?: number,
): BlockManifest {
  const total =
    size ??
    (layout.headerSize > 0
      ? layout.headerSize + (blocks.length - 1) * layout.blockSize
      : blocks.length * layout.blockSize);
  return { ...layout, size: total, checksum: CHECKSUM, blocks: blocks.map(digest) };
}

/** Every byte of the new file is written exactly once, by a copy or a fetch. */
function coverage(plan: DeltaPlan, size: number): number[] {
  const written = new Array<number>(size).fill(0);
  for (const copy of plan.copies)
    for (let i = copy.to; i < copy.to + copy.length; i++) written[i] = (written[i] ?? 0) + 1;
  for (const fetch of plan.fetches)
    for (let i = fetch.start; i < fetch.end; i++) written[i] = (written[i] ?? 0) + 1;
  return written;
}

describe('block layouts', () => {
  it('DuckDB: a 12 KiB header block, then 256 KiB blocks; SQLite: 64 KiB blocks', () => {
    expect(blockLayoutFor('duckdb')).toEqual({ headerSize: 12_288, blockSize: 262_144 });
    expect(blockLayoutFor('sqlite')).toEqual({ headerSize: 0, blockSize: 65_536 });
    expect(blockLayoutFor('turso')).toEqual(blockLayoutFor('sqlite'));
    expect(blockManifestKey('a/b.duckdb')).toBe('a/b.duckdb.ferry-blocks.json');
  });

  it('counts and places blocks, the last one short', () => {
    const layout = { headerSize: 4, blockSize: 10 };
    expect(blockCount(layout, 0)).toBe(0);
    expect(blockCount(layout, 3)).toBe(1);
    expect(blockCount(layout, 25)).toBe(4);
    expect(blockRange(layout, 25, 0)).toEqual({ start: 0, end: 4 });
    expect(blockRange(layout, 25, 3)).toEqual({ start: 24, end: 25 });
    expect(blockCount({ headerSize: 0, blockSize: 10 }, 25)).toBe(3);
  });
});

describe('parseBlockManifest', () => {
  const good = manifest([1, 2, 3], { headerSize: 0, blockSize: 4096 });
  const text = serializeBlockManifest(good, 'duckdb');

  it('reads back what the writer serialises', () => {
    expect(parseBlockManifest(text, 'u', good)).toEqual(good);
  });

  it.each([
    ['not JSON', 'nope', 'it is not a JSON object'],
    [
      'another version',
      text.replace('"ferry-block-manifest":1', '"ferry-block-manifest":2'),
      'its version is 2',
    ],
    ['another algorithm', text.replace('"SHA256"', '"MD5"'), 'its algorithm is "MD5"'],
    ['a block missing', text.replace(`,"${digest(3)}"`, ''), 'it lists 2 blocks where the layout has 3'],
    ['a bad digest', text.replace(digest(3), 'xyz'), 'a block digest is not 64 lowercase hex digits'],
    [
      'blocks of a few bytes (the held file would be hashed byte by byte)',
      serializeBlockManifest(
        manifest(
          Array.from({ length: 12_288 }, (_, i) => i),
          { headerSize: 0, blockSize: 1 },
        ),
      ),
      'its block-size 1 is below the smallest allowed, 4096',
    ],
  ])('refuses %s, naming the sidecar and what is wrong', (_, body, reason) => {
    expect(() => parseBlockManifest(body, 's3://b/k.ferry-blocks.json', good)).toThrow(
      expect.objectContaining({
        code: 'ERR_BLOCK_MANIFEST_INVALID',
        message: expect.stringContaining(reason),
      }),
    );
  });

  it("refuses a manifest of another file (size or checksum not the entry's)", () => {
    expect(() => parseBlockManifest(text, 'u', { ...good, size: 31 })).toThrow(
      /describes 12288 bytes but the snapshot has 31/,
    );
    expect(() => parseBlockManifest(text, 'u', { ...good, checksum: 'b'.repeat(64) })).toThrow(
      /its checksum is not the snapshot's/,
    );
  });
});

describe('planDelta', () => {
  it('copies unchanged blocks in place, coalesced, and fetches the changed ones', () => {
    const local = manifest([1, 2, 3, 4, 5, 6]);
    const next = manifest([1, 2, 9, 4, 5, 6, 7]);
    const plan = planDelta(local, next, { maxGapBytes: 0 });
    expect(plan.copies).toEqual([
      { from: 0, to: 0, length: 20 },
      { from: 30, to: 30, length: 30 },
    ]);
    expect(plan.fetches).toEqual([
      { start: 20, end: 30 },
      { start: 60, end: 70 },
    ]);
    expect(plan).toMatchObject({ reusedBytes: 50, fetchedBytes: 20 });
    expect(coverage(plan, 70).every((n) => n === 1)).toBe(true);
  });

  it('finds a block that moved, and merges fetches across small gaps (the gap is fetched, not copied)', () => {
    const local = manifest([1, 2, 3, 4, 5]);
    const next = manifest([5, 2, 8, 4, 9]);
    const plan = planDelta(local, next, { maxGapBytes: 10 });
    expect(plan.copies).toEqual([
      { from: 40, to: 0, length: 10 },
      { from: 10, to: 10, length: 10 },
    ]);
    expect(plan.fetches).toEqual([{ start: 20, end: 50 }]);
    expect(plan).toMatchObject({ reusedBytes: 20, fetchedBytes: 30 });
    expect(coverage(plan, 50).every((n) => n === 1)).toBe(true);
  });

  it('splits long fetches at maxRangeBytes and never reuses a block of another length', () => {
    const layout = { headerSize: 4, blockSize: 10 };
    const local = manifest(['h', 1, 2], layout, 20);
    const next = manifest(['h', 7, 2, 9, 5], layout, 40);
    const plan = planDelta(local, next, { maxGapBytes: 0, maxRangeBytes: 15 });
    // Local digest 2 is of a 6-byte block (bytes 14–19): the new 10-byte block with digest 2 is fetched.
    expect(plan.copies).toEqual([{ from: 0, to: 0, length: 4 }]);
    expect(plan.fetches).toEqual([
      { start: 4, end: 19 },
      { start: 19, end: 34 },
      { start: 34, end: 40 },
    ]);
    expect(coverage(plan, 40).every((n) => n === 1)).toBe(true);
  });

  it('a file that shares nothing is all fetched', () => {
    const plan = planDelta(manifest([1, 2]), manifest([3, 4, 5]));
    expect(plan).toMatchObject({ copies: [], reusedBytes: 0, fetchedBytes: 30 });
  });
});
