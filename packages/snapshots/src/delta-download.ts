/**
 * Delta downloads: when the snapshot to download has a block manifest (the sidecar Ferry's writer
 * uploads, `@ferry/core`'s `block-manifest.ts`) and the live file holds an earlier snapshot whose
 * block digests are known (kept beside it as `<live>.ferry-blocks.json`, or computed from it once),
 * the temporary file is assembled from the live file's unchanged blocks and ranged reads of the
 * changed ones (coalesced, several in flight), hashed in file order as it is written. The result is
 * a downloaded snapshot like any other: the caller checks its SHA-256 against metadata.json before
 * anything can go live, and the live file is only ever read (through a descriptor opened once, so a
 * swap of the live path meanwhile changes nothing).
 *
 * Anything that makes the delta doubtful — no manifest, a manifest that does not describe the
 * snapshot, no usable local file, too little in common, a failed range, an assembled file whose
 * SHA-256 is not the recorded one — returns a fallback reason instead, and the caller downloads
 * the whole file into the same temporary file (truncated first); a full disk is thrown instead (the
 * whole file would not fit either). The delta itself writes with
 * positional writes only, so the file position the full download appends from is still 0.
 */
import { createHash } from 'node:crypto';
import type { FileHandle } from 'node:fs/promises';
import { open, readFile, rename, rm, writeFile } from 'node:fs/promises';
import {
  BLOCK_MANIFEST_MAX_BLOCKS,
  type BlockCopy,
  type BlockFetch,
  type BlockManifest,
  BlockManifestError,
  blockCount,
  blockManifestKey,
  blockManifestMaxBytes,
  type DeltaPlan,
  parseBlockManifest,
  planDelta,
  sameLayout,
  serializeBlockManifest,
} from '@ferry/core/base';
import { digestFileBlocks, readRange } from '@ferry/store/objects';

/** How a snapshot's bytes reached the temporary file. */
export interface SnapshotTransfer {
  /** `delta`: unchanged blocks copied from the live file, the rest fetched; `full`: every byte fetched. */
  readonly mode: 'delta' | 'full';
  readonly fetchedBytes: number;
  readonly reusedBytes: number;
  /** Why a full download was made although delta downloads are on (absent for a delta). */
  readonly fallback?: string;
  /** Whether the fallback is worth a warning (a bad manifest, a mismatch, a failed range), not just the store's shape. */
  readonly doubtful?: boolean;
}

/** The local file a delta copies from: the live file and the snapshot its manifest names. */
export interface HeldFile {
  readonly path: string;
  readonly inode: number;
  readonly mtimeNs: string;
  readonly size: number;
  /** Lowercase hex SHA-256 recorded for it. */
  readonly checksum: string;
}

export interface DeltaContext {
  readonly store: import('@ferry/core/base').ObjectStore;
  readonly key: string;
  readonly uri: string;
  readonly size: number;
  readonly checksum: string;
  /** The live file and what it holds, when a manifest proves it. */
  readonly held: HeldFile | undefined;
  /**
   * With signed snapshots, the manifest's SHA-256 the writer signed (`blocks-sha256`; null: it
   * signed none): a manifest whose bytes hash otherwise is not used. Absent: not checked.
   */
  readonly blocksSha256?: string | null | undefined;
  readonly concurrency: number;
  readonly partSize: number;
  /** Below this share of the new file's bytes reused, the whole file is fetched instead. */
  readonly minReuse: number;
  readonly signal?: AbortSignal;
  /** Called after each write (the caller's background flushes). */
  readonly wrote: (bytes: number) => void;
  readonly onProgress?: (bytes: number) => void;
}

export type DeltaOutcome =
  | {
      readonly kind: 'assembled';
      readonly digest: string;
      readonly transfer: SnapshotTransfer;
      readonly manifest: BlockManifest;
    }
  | {
      readonly kind: 'fallback';
      readonly reason: string;
      readonly doubtful: boolean;
      readonly manifest?: BlockManifest;
    };

/** The file beside `path` holding its block manifest. */
export function blocksPath(path: string): string {
  return `${path}.ferry-blocks.json`;
}

/** Pieces the copies are read and written in (and hashed between). */
const COPY_PIECE = 8 * 1024 * 1024;

/** ENOSPC (no space) or EDQUOT (quota) from a write or fsync of the temporary file. */
export function isDiskFull(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return code === 'ENOSPC' || code === 'EDQUOT';
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/** The snapshot's manifest from the store: `undefined` when there is none; throws when it is unusable. */
async function remoteManifest(context: DeltaContext): Promise<BlockManifest | undefined> {
  const key = blockManifestKey(context.key);
  const got = await context.store.get(key, {
    maxBytes: blockManifestMaxBytes(context.size),
    ...(context.signal === undefined ? {} : { signal: context.signal }),
  });
  if (got.status !== 'ok') return undefined;
  const uri = `${context.store.location}${key}`;
  const signed = context.blocksSha256;
  if (signed !== undefined) {
    // Planted without the writer's key: it could only cost work (the file's SHA-256 is checked
    // after the assembly), but it is not used at all.
    const digest = createHash('sha256').update(got.body).digest('hex');
    if (signed === null)
      throw new BlockManifestError(uri, "the writer's signed statement names no block manifest");
    if (digest !== signed.toLowerCase()) {
      throw new BlockManifestError(uri, `its SHA-256 ${digest} is not the ${signed} its writer signed`);
    }
  }
  return parseBlockManifest(new TextDecoder().decode(got.body), uri, {
    size: context.size,
    checksum: context.checksum,
  });
}

/**
 * The block manifest of the held file in `layout`: the one kept beside it when it describes it,
 * else computed from the file (once: it is kept for the next swap). `undefined` when the file's
 * content is not what its manifest says.
 */
async function localManifest(
  held: HeldFile,
  layout: BlockManifest,
  signal?: AbortSignal,
): Promise<BlockManifest | undefined> {
  try {
    const kept = parseBlockManifest(
      await readFile(blocksPath(held.path), 'utf8'),
      blocksPath(held.path),
      held,
    );
    if (sameLayout(kept, layout)) return kept;
  } catch {
    // Absent, for another file or unreadable: computed below.
  }
  const computed = await digestFileBlocks(held.path, layout, signal);
  if (computed.checksum !== held.checksum || computed.size !== held.size) return undefined;
  const manifest: BlockManifest = {
    headerSize: layout.headerSize,
    blockSize: layout.blockSize,
    size: computed.size,
    checksum: computed.checksum,
    blocks: computed.blocks,
  };
  await saveBlocks(blocksPath(held.path), manifest);
  return manifest;
}

/** Writes a block manifest file (through a temporary sibling: a reader never sees half of one). */
export async function saveBlocks(path: string, manifest: BlockManifest): Promise<void> {
  const temp = `${path}.tmp`;
  await writeFile(temp, serializeBlockManifest(manifest));
  await rename(temp, path);
}

/** Moves the block manifest kept beside `from` to beside `to` (a commit's rename); a missing one is no error. */
export async function moveBlocks(from: string, to: string): Promise<void> {
  await rename(blocksPath(from), blocksPath(to)).catch(async (error: NodeJS.ErrnoException) => {
    if (error.code !== 'ENOENT') throw error;
    // The new file has none: an older one beside `to` describes another file; drop it.
    await rm(blocksPath(to), { force: true });
  });
}

/** Segments of the new file in order: copies and fetches interleaved by position. */
type Segment = ({ readonly kind: 'copy' } & BlockCopy) | ({ readonly kind: 'fetch' } & BlockFetch);

function segmentsOf(plan: DeltaPlan): Segment[] {
  const segments: Segment[] = [
    ...plan.copies.map((copy) => ({ kind: 'copy' as const, ...copy })),
    ...plan.fetches.map((fetch) => ({ kind: 'fetch' as const, ...fetch })),
  ];
  return segments.sort((a, b) => (a.kind === 'copy' ? a.to : a.start) - (b.kind === 'copy' ? b.to : b.start));
}

/**
 * Tries to assemble the snapshot in `handle` (an empty temporary file) from the held file and
 * ranged reads. On `fallback` the file may hold partial content: the caller truncates it.
 */
export async function assembleDelta(context: DeltaContext, handle: FileHandle): Promise<DeltaOutcome> {
  let manifest: BlockManifest | undefined;
  try {
    manifest = await remoteManifest(context);
  } catch (error) {
    if (context.signal?.aborted === true) throw error;
    return { kind: 'fallback', reason: messageOf(error), doubtful: true };
  }
  if (manifest === undefined) {
    return { kind: 'fallback', reason: 'the snapshot has no block manifest', doubtful: false };
  }
  const { held } = context;
  if (held === undefined) {
    return { kind: 'fallback', reason: 'no earlier snapshot is held locally', doubtful: false, manifest };
  }
  const source = await open(held.path, 'r').catch(() => undefined);
  if (source === undefined) {
    return { kind: 'fallback', reason: 'the live file cannot be opened', doubtful: false, manifest };
  }
  try {
    const info = await source.stat({ bigint: true });
    if (
      Number(info.ino) !== held.inode ||
      String(info.mtimeNs) !== held.mtimeNs ||
      Number(info.size) !== held.size
    ) {
      return { kind: 'fallback', reason: 'the live file changed', doubtful: false, manifest };
    }
    const heldBlocks = blockCount(manifest, held.size);
    if (heldBlocks > BLOCK_MANIFEST_MAX_BLOCKS) {
      // Its digests would outgrow any manifest a reader accepts (memory, and a kept file too long to write).
      return {
        kind: 'fallback',
        reason: `the live file has ${heldBlocks} blocks in the manifest's layout, more than ${BLOCK_MANIFEST_MAX_BLOCKS}`,
        doubtful: false,
        manifest,
      };
    }
    let local: BlockManifest | undefined;
    try {
      local = await localManifest(held, manifest, context.signal);
    } catch (error) {
      if (context.signal?.aborted === true || isDiskFull(error)) throw error;
      return {
        kind: 'fallback',
        reason: `the live file's blocks could not be read or kept (${messageOf(error)})`,
        doubtful: true,
        manifest,
      };
    }
    if (local === undefined) {
      return {
        kind: 'fallback',
        reason: 'the live file does not match its recorded SHA-256',
        doubtful: true,
        manifest,
      };
    }
    const plan = planDelta(local, manifest, { maxRangeBytes: context.partSize });
    if (plan.reusedBytes < context.minReuse * context.size) {
      return {
        kind: 'fallback',
        reason: `only ${plan.reusedBytes} of ${context.size} bytes are shared with the held snapshot`,
        doubtful: false,
        manifest,
      };
    }
    let digest: string;
    try {
      digest = await writeSegments(context, plan, source, handle);
    } catch (error) {
      // A full disk is no doubt about the delta: the whole file would not fit either.
      if (context.signal?.aborted === true || isDiskFull(error)) throw error;
      return {
        kind: 'fallback',
        reason: `assembling it failed (${messageOf(error)})`,
        doubtful: true,
        manifest,
      };
    }
    if (digest !== context.checksum.toLowerCase()) {
      // The manifest (or the held file's) lied about a block: it is not kept for the next swap.
      return {
        kind: 'fallback',
        reason: `the assembled file's SHA-256 ${digest} is not the recorded ${context.checksum}`,
        doubtful: true,
      };
    }
    return {
      kind: 'assembled',
      digest,
      manifest,
      transfer: { mode: 'delta', fetchedBytes: plan.fetchedBytes, reusedBytes: plan.reusedBytes },
    };
  } finally {
    await source.close();
  }
}

/** Writes every segment in order at its position, hashing the new file as it goes; returns its digest. */
async function writeSegments(
  context: DeltaContext,
  plan: DeltaPlan,
  source: FileHandle,
  target: FileHandle,
): Promise<string> {
  const segments = segmentsOf(plan);
  const hash = createHash('sha256');
  const controller = new AbortController();
  const onAbort = (): void => controller.abort(context.signal?.reason);
  context.signal?.addEventListener('abort', onAbort, { once: true });
  if (context.signal?.aborted === true) onAbort();
  // Fetches run ahead of the assembly, at most `concurrency` in flight or waiting.
  const fetches = segments.filter((s): s is Segment & { kind: 'fetch' } => s.kind === 'fetch');
  const inFlight = new Map<number, Promise<Uint8Array[]>>();
  let nextFetch = 0;
  const startFetches = (): void => {
    while (inFlight.size < context.concurrency && nextFetch < fetches.length) {
      const { start, end } = fetches[nextFetch++] as BlockFetch;
      const part = readRange(context.store, context.key, start, end, controller.signal);
      part.catch((error: unknown) => controller.abort(error));
      inFlight.set(start, part);
    }
  };
  let written = 0;
  let pendingWrite: Promise<unknown> = Promise.resolve();
  const write = async (chunks: readonly Uint8Array[], position: number, bytes: number): Promise<void> => {
    for (const chunk of chunks) hash.update(chunk);
    await pendingWrite;
    pendingWrite = writeAll(target, chunks, bytes, position);
    pendingWrite.catch(() => undefined);
    written += bytes;
    context.wrote(bytes);
    context.onProgress?.(written);
  };
  try {
    startFetches();
    for (const segment of segments) {
      context.signal?.throwIfAborted();
      if (segment.kind === 'fetch') {
        const part = inFlight.get(segment.start) as Promise<Uint8Array[]>;
        const chunks = await part;
        inFlight.delete(segment.start);
        startFetches();
        await write(chunks, segment.start, segment.end - segment.start);
        continue;
      }
      // Copies: read the next piece while the previous one is hashed and written.
      let offset = 0;
      let reading = readPiece(source, segment.from, Math.min(COPY_PIECE, segment.length));
      reading.catch(() => undefined);
      while (offset < segment.length) {
        const piece = await reading;
        const length = piece.byteLength;
        const nextOffset = offset + length;
        if (nextOffset < segment.length) {
          reading = readPiece(
            source,
            segment.from + nextOffset,
            Math.min(COPY_PIECE, segment.length - nextOffset),
          );
          reading.catch(() => undefined);
        }
        await write([piece], segment.to + offset, length);
        offset = nextOffset;
      }
    }
    await pendingWrite;
  } finally {
    context.signal?.removeEventListener('abort', onAbort);
    if (inFlight.size > 0) {
      controller.abort(new Error('the delta download stopped'));
      await Promise.allSettled(inFlight.values());
    }
    await pendingWrite.catch(() => undefined);
  }
  if (written !== context.size) throw new Error(`${written} bytes were assembled, not ${context.size}`);
  return hash.digest('hex');
}

/**
 * Writes `chunks` (`bytes` in all) at `position` (null: at the file's position, appending), resuming
 * a short write (rare: a signal, a nearly full disk, where ENOSPC then surfaces on the rest). The
 * full download appends with it, a delta writes its segments in place.
 */
export async function writeAll(
  handle: FileHandle,
  chunks: readonly Uint8Array[],
  bytes: number,
  position: number | null = null,
): Promise<void> {
  const [only] = chunks;
  let { bytesWritten } = await (chunks.length === 1 && only !== undefined
    ? handle.write(only, 0, only.byteLength, position)
    : handle.writev(chunks as Uint8Array[], position ?? undefined));
  if (bytesWritten === bytes) return;
  const rest = Buffer.concat(chunks);
  while (bytesWritten < bytes) {
    const at = position === null ? null : position + bytesWritten;
    const { bytesWritten: written } = await handle.write(rest, bytesWritten, bytes - bytesWritten, at);
    if (written === 0) throw new Error(`a write at byte ${at ?? bytesWritten} wrote nothing`);
    bytesWritten += written;
  }
}

async function readPiece(source: FileHandle, position: number, length: number): Promise<Buffer> {
  const buffer = Buffer.allocUnsafe(length);
  let filled = 0;
  while (filled < length) {
    const { bytesRead } = await source.read(buffer, filled, length - filled, position + filled);
    if (bytesRead === 0) throw new Error(`the live file ended at byte ${position + filled}`);
    filled += bytesRead;
  }
  return buffer;
}
