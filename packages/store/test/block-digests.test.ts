/**
 * BlockDigester: the block digests do not depend on how the stream is cut into chunks, and
 * digestFileBlocks reads a real file to the same digests and its whole-file SHA-256.
 */
import { createHash, randomBytes } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { BlockDigester, digestFileBlocks } from '../src/index.js';

const sha = (bytes: Uint8Array) => createHash('sha256').update(bytes).digest('hex');
const layout = { headerSize: 12, blockSize: 100 };
const bytes = randomBytes(12 + 100 * 3 + 7);
const expected = [
  sha(bytes.subarray(0, 12)),
  sha(bytes.subarray(12, 112)),
  sha(bytes.subarray(112, 212)),
  sha(bytes.subarray(212, 312)),
  sha(bytes.subarray(312)),
];

describe('BlockDigester', () => {
  it.each([1, 7, 12, 100, 1000])('gives the same digests fed in chunks of %i bytes', (chunk) => {
    const digester = new BlockDigester(layout);
    for (let at = 0; at < bytes.byteLength; at += chunk) digester.update(bytes.subarray(at, at + chunk));
    expect(digester.digest()).toEqual(expected);
  });

  it('an exact multiple of the block size ends without an empty block; no header block when headerSize is 0', () => {
    const digester = new BlockDigester({ headerSize: 0, blockSize: 100 });
    digester.update(bytes.subarray(0, 200));
    expect(digester.digest()).toEqual([sha(bytes.subarray(0, 100)), sha(bytes.subarray(100, 200))]);
  });

  it('digestFileBlocks reads a file to the same digests, its size and SHA-256', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'ferry-blocks-'));
    try {
      await writeFile(join(dir, 'f'), bytes);
      expect(await digestFileBlocks(join(dir, 'f'), layout)).toEqual({
        blocks: expected,
        checksum: sha(bytes),
        size: bytes.byteLength,
      });
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
