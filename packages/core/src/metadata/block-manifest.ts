/**
 * The block manifest: a sidecar object Ferry's writer puts beside each snapshot file
 * (`<snapshot key>.ferry-blocks.json`) listing the SHA-256 of each fixed-size block of the file, so
 * a reader that holds an earlier snapshot of the dataset can copy the blocks it already has and
 * fetch only the changed ones with ranged reads. Spice readers read only metadata.json and the
 * snapshot URI, so the sidecar changes nothing for them.
 *
 * This module is the pure part: the layout (block size per engine, chosen by measurement: see
 * docs/delta-snapshots.md), the JSON form, its validation against the snapshot's metadata.json
 * entry, and the plan of a delta download (which byte ranges to copy from the local file, which to
 * fetch, coalesced). Hashing and I/O live in `@ferry/store` (`BlockDigester`) and `@ferry/snapshots`.
 * A manifest only ever saves bytes: the assembled file is checked against metadata.json's whole-file
 * SHA-256 before it can go live, so a wrong manifest costs a fallback to the full download, never
 * a wrong file.
 */
import type { FileFormat } from '../engines.js';
import { BlockManifestError } from './errors.js';

/** The sidecar's key is the snapshot's key with this suffix. */
export const BLOCK_MANIFEST_SUFFIX = '.ferry-blocks.json';
/** The JSON form's version (`ferry-block-manifest`). */
export const BLOCK_MANIFEST_VERSION = 1;
/** A manifest larger than this is refused before it is read (a 1 TiB file at 256 KiB blocks is ~280 MiB: too big to help). */
export const BLOCK_MANIFEST_MAX_BYTES = 64 * 1024 * 1024;
/** The most blocks a manifest of {@link BLOCK_MANIFEST_MAX_BYTES} can list (67 bytes a digest: 64 hex digits, quotes, comma). */
export const BLOCK_MANIFEST_MAX_BLOCKS = Math.floor(BLOCK_MANIFEST_MAX_BYTES / 67);
/** The smallest `block-size` a manifest may use (a page): the writer's are 64 KiB and 256 KiB. */
export const BLOCK_MANIFEST_MIN_BLOCK_SIZE = 4096;

/**
 * The largest manifest a snapshot of `size` bytes can have: a digest for each block at the smallest
 * block size (and a header block), 64 KiB for the rest; never more than {@link BLOCK_MANIFEST_MAX_BYTES}.
 */
export function blockManifestMaxBytes(size: number): number {
  const digests = Math.ceil(size / BLOCK_MANIFEST_MIN_BLOCK_SIZE) + 1;
  return Math.min(BLOCK_MANIFEST_MAX_BYTES, 64 * 1024 + 67 * digests);
}

/** How a file is cut into blocks: one header block of `headerSize` bytes (none when 0), then `blockSize` blocks. */
export interface BlockLayout {
  readonly headerSize: number;
  readonly blockSize: number;
}

export interface BlockManifest extends BlockLayout {
  /** The file's size in bytes. */
  readonly size: number;
  /** Lowercase hex SHA-256 of the whole file (equals metadata.json's `snapshot-checksum`). */
  readonly checksum: string;
  /** Lowercase hex SHA-256 of each block, in file order. */
  readonly blocks: readonly string[];
}

/**
 * DuckDB: a 12 KiB region of headers (one 4 KiB file header, two 4 KiB database headers written in
 * turn at each checkpoint), then 256 KiB blocks (`DEFAULT_BLOCK_ALLOC_SIZE`): manifest blocks that
 * fall on DuckDB's own, so a rewritten DuckDB block dirties one manifest block, not two.
 * SQLite (and Turso's SQLite files): pages change in place; 64 KiB blocks (16 default pages) keep a
 * 1 GiB file's manifest near 1 MiB while an append dirties its new pages, the interior pages on the
 * right edge of the b-tree and page 1. Measured: docs/delta-snapshots.md.
 */
export function blockLayoutFor(format: FileFormat | string): BlockLayout {
  if (format === 'duckdb') return { headerSize: 12 * 1024, blockSize: 256 * 1024 };
  if (format === 'sqlite' || format === 'turso') return { headerSize: 0, blockSize: 64 * 1024 };
  return { headerSize: 0, blockSize: 256 * 1024 };
}

/** The key of the manifest of the snapshot at `snapshotKey`. */
export function blockManifestKey(snapshotKey: string): string {
  return `${snapshotKey}${BLOCK_MANIFEST_SUFFIX}`;
}

/** How many blocks a file of `size` bytes has in `layout`. */
export function blockCount(layout: BlockLayout, size: number): number {
  if (size <= 0) return 0;
  if (layout.headerSize > 0) {
    if (size <= layout.headerSize) return 1;
    return 1 + Math.ceil((size - layout.headerSize) / layout.blockSize);
  }
  return Math.ceil(size / layout.blockSize);
}

/** Byte range `[start, end)` of block `index` of a file of `size` bytes. */
export function blockRange(layout: BlockLayout, size: number, index: number): { start: number; end: number } {
  if (layout.headerSize > 0) {
    if (index === 0) return { start: 0, end: Math.min(size, layout.headerSize) };
    const start = layout.headerSize + (index - 1) * layout.blockSize;
    return { start, end: Math.min(size, start + layout.blockSize) };
  }
  const start = index * layout.blockSize;
  return { start, end: Math.min(size, start + layout.blockSize) };
}

const HEX_64 = /^[0-9a-f]{64}$/;

/** The sidecar's JSON text. */
export function serializeBlockManifest(manifest: BlockManifest, engine?: string): string {
  return JSON.stringify({
    'ferry-block-manifest': BLOCK_MANIFEST_VERSION,
    ...(engine === undefined ? {} : { engine }),
    algorithm: 'SHA256',
    size: manifest.size,
    checksum: manifest.checksum,
    'header-size': manifest.headerSize,
    'block-size': manifest.blockSize,
    blocks: manifest.blocks,
  });
}

function positiveInteger(value: unknown, allowZero: boolean): value is number {
  return typeof value === 'number' && Number.isSafeInteger(value) && (allowZero ? value >= 0 : value > 0);
}

/**
 * Parses a sidecar and checks it describes the snapshot metadata.json records (`expected`): same
 * size, same whole-file checksum, a sane layout and one well-formed digest per block.
 * @throws BlockManifestError naming `uri` and what is wrong.
 */
export function parseBlockManifest(
  text: string,
  uri: string,
  expected: { readonly size: number; readonly checksum: string },
): BlockManifest {
  let value: Record<string, unknown>;
  try {
    const parsed: unknown = JSON.parse(text);
    if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) {
      throw new Error('not an object');
    }
    value = parsed as Record<string, unknown>;
  } catch {
    throw new BlockManifestError(uri, 'it is not a JSON object');
  }
  const version = value['ferry-block-manifest'];
  if (version !== BLOCK_MANIFEST_VERSION) {
    throw new BlockManifestError(
      uri,
      `its version is ${JSON.stringify(version)}, not ${BLOCK_MANIFEST_VERSION}`,
    );
  }
  if (String(value.algorithm).toUpperCase() !== 'SHA256') {
    throw new BlockManifestError(uri, `its algorithm is ${JSON.stringify(value.algorithm)}, not SHA256`);
  }
  const { size, checksum, blocks } = value;
  const headerSize = value['header-size'];
  const blockSize = value['block-size'];
  if (
    !positiveInteger(size, true) ||
    !positiveInteger(headerSize, true) ||
    !positiveInteger(blockSize, false)
  ) {
    throw new BlockManifestError(uri, 'size, header-size and block-size must be non-negative integers');
  }
  if (blockSize < BLOCK_MANIFEST_MIN_BLOCK_SIZE) {
    throw new BlockManifestError(
      uri,
      `its block-size ${blockSize} is below the smallest allowed, ${BLOCK_MANIFEST_MIN_BLOCK_SIZE}`,
    );
  }
  if (size !== expected.size) {
    throw new BlockManifestError(uri, `it describes ${size} bytes but the snapshot has ${expected.size}`);
  }
  if (typeof checksum !== 'string' || checksum.toLowerCase() !== expected.checksum.toLowerCase()) {
    throw new BlockManifestError(uri, "its checksum is not the snapshot's");
  }
  const layout = { headerSize, blockSize };
  if (!Array.isArray(blocks) || blocks.length !== blockCount(layout, size)) {
    throw new BlockManifestError(
      uri,
      `it lists ${Array.isArray(blocks) ? blocks.length : 'no'} blocks where the layout has ${blockCount(layout, size)}`,
    );
  }
  if (!blocks.every((digest) => typeof digest === 'string' && HEX_64.test(digest))) {
    throw new BlockManifestError(uri, 'a block digest is not 64 lowercase hex digits');
  }
  return { size, checksum: checksum.toLowerCase(), headerSize, blockSize, blocks: blocks as string[] };
}

/** Whether two manifests cut files the same way (so their blocks can be compared one to one). */
export function sameLayout(a: BlockLayout, b: BlockLayout): boolean {
  return a.headerSize === b.headerSize && a.blockSize === b.blockSize;
}

/** Bytes `[from, from + length)` of the local file go to `[to, to + length)` of the new one. */
export interface BlockCopy {
  readonly from: number;
  readonly to: number;
  readonly length: number;
}

/** Bytes `[start, end)` of the new snapshot are fetched with one ranged read. */
export interface BlockFetch {
  readonly start: number;
  readonly end: number;
}

export interface DeltaPlan {
  readonly copies: readonly BlockCopy[];
  readonly fetches: readonly BlockFetch[];
  readonly reusedBytes: number;
  readonly fetchedBytes: number;
}

export interface DeltaPlanOptions {
  /** Unchanged bytes between two fetched ranges fetched too rather than split the read. Default 512 KiB. */
  readonly maxGapBytes?: number;
  /** No ranged read longer than this (parallel reads). Default 8 MiB. */
  readonly maxRangeBytes?: number;
}

/**
 * Which bytes of the new snapshot (`next`) can be copied from the local file (`local`, the
 * manifest of the file the reader holds) and which must be fetched. A block is reused when the
 * local file has a block of the same length and digest: at the same place first, anywhere else
 * otherwise. Adjacent copies and fetches are coalesced; fetches closer than `maxGapBytes` are merged
 * (the gap is fetched), then split at `maxRangeBytes`.
 */
export function planDelta(
  local: BlockManifest,
  next: BlockManifest,
  options: DeltaPlanOptions = {},
): DeltaPlan {
  const maxGap = options.maxGapBytes ?? 512 * 1024;
  const maxRange = options.maxRangeBytes ?? 8 * 1024 * 1024;
  const localByDigest = new Map<string, number>();
  for (let i = local.blocks.length - 1; i >= 0; i--) {
    const range = blockRange(local, local.size, i);
    localByDigest.set(`${local.blocks[i]}:${range.end - range.start}`, range.start);
  }
  const copies: BlockCopy[] = [];
  const wanted: BlockFetch[] = [];
  next.blocks.forEach((digest, i) => {
    const { start, end } = blockRange(next, next.size, i);
    const length = end - start;
    let from: number | undefined;
    if (sameLayout(local, next) && i < local.blocks.length && local.blocks[i] === digest) {
      const here = blockRange(local, local.size, i);
      if (here.end - here.start === length) from = here.start;
    }
    from ??= localByDigest.get(`${digest}:${length}`);
    if (from === undefined) {
      const last = wanted.at(-1);
      if (last !== undefined && start - last.end <= maxGap)
        wanted[wanted.length - 1] = { start: last.start, end };
      else wanted.push({ start, end });
      return;
    }
    const previous = copies.at(-1);
    if (
      previous !== undefined &&
      previous.to + previous.length === start &&
      previous.from + previous.length === from
    ) {
      copies[copies.length - 1] = { ...previous, length: previous.length + length };
    } else {
      copies.push({ from, to: start, length });
    }
  });
  const fetches: BlockFetch[] = [];
  for (const range of wanted) {
    for (let start = range.start; start < range.end; start += maxRange) {
      fetches.push({ start, end: Math.min(range.end, start + maxRange) });
    }
  }
  const fetchedBytes = fetches.reduce((sum, f) => sum + (f.end - f.start), 0);
  // Gaps merged into a fetch are fetched, not copied: drop the copies they cover.
  const kept = fetches.length === 0 ? copies : subtractFetched(copies, fetches);
  return { copies: kept, fetches, reusedBytes: next.size - fetchedBytes, fetchedBytes };
}

/** The parts of `copies` whose destination no fetch covers (fetches sorted, disjoint). */
function subtractFetched(copies: readonly BlockCopy[], fetches: readonly BlockFetch[]): BlockCopy[] {
  const out: BlockCopy[] = [];
  let f = 0;
  for (const copy of copies) {
    let to = copy.to;
    const end = copy.to + copy.length;
    while (f < fetches.length && (fetches[f] as BlockFetch).end <= to) f++;
    let g = f;
    while (to < end) {
      const fetch = fetches[g];
      if (fetch === undefined || fetch.start >= end) {
        out.push({ from: copy.from + (to - copy.to), to, length: end - to });
        break;
      }
      if (fetch.start > to) out.push({ from: copy.from + (to - copy.to), to, length: fetch.start - to });
      to = Math.max(to, fetch.end);
      g++;
    }
  }
  return out;
}
