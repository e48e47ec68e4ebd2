/**
 * SHA-256 of each block of a byte stream cut by a `BlockLayout` (`@ferry/core`'s block manifest):
 * fed the chunks of an upload or a file read in order, whatever their sizes, it hashes them once
 * more per block. The writer computes a snapshot's manifest in the pass that uploads it; a reader
 * computes the manifest of a file it holds once, when the store's manifest cannot be compared to a
 * local one.
 */
import { createHash, type Hash } from 'node:crypto';
import { open } from 'node:fs/promises';
import type { BlockLayout } from '@ferry/core/base';

export class BlockDigester {
  readonly #layout: BlockLayout;
  readonly #blocks: string[] = [];
  #hash: Hash = createHash('sha256');
  /** Bytes still wanted by the block being hashed. */
  #left: number;
  #any = false;

  constructor(layout: BlockLayout) {
    this.#layout = layout;
    this.#left = layout.headerSize > 0 ? layout.headerSize : layout.blockSize;
  }

  update(chunk: Uint8Array): void {
    let offset = 0;
    while (offset < chunk.byteLength) {
      const take = Math.min(this.#left, chunk.byteLength - offset);
      this.#hash.update(take === chunk.byteLength ? chunk : chunk.subarray(offset, offset + take));
      this.#any = true;
      offset += take;
      this.#left -= take;
      if (this.#left === 0) this.#close();
    }
  }

  /** The digests of every block (the last one may be short). */
  digest(): string[] {
    if (this.#any) this.#close();
    return this.#blocks;
  }

  #close(): void {
    this.#blocks.push(this.#hash.digest('hex'));
    this.#hash = createHash('sha256');
    this.#left = this.#layout.blockSize;
    this.#any = false;
  }
}

/** The block digests and whole-file SHA-256 of the file at `path`, read once. */
export async function digestFileBlocks(
  path: string,
  layout: BlockLayout,
  signal?: AbortSignal,
): Promise<{ blocks: string[]; checksum: string; size: number }> {
  const digester = new BlockDigester(layout);
  const whole = createHash('sha256');
  const handle = await open(path, 'r');
  const buffer = Buffer.allocUnsafe(8 * 1024 * 1024);
  let size = 0;
  try {
    for (;;) {
      signal?.throwIfAborted();
      const { bytesRead } = await handle.read(buffer, 0, buffer.byteLength, null);
      if (bytesRead === 0) break;
      const chunk = buffer.subarray(0, bytesRead);
      digester.update(chunk);
      whole.update(chunk);
      size += bytesRead;
    }
  } finally {
    await handle.close();
  }
  return { blocks: digester.digest(), checksum: whole.digest('hex'), size };
}
