/**
 * The snapshot files of one dataset on local disk: download a snapshot into a temporary sibling of
 * the live file (checksum algorithm, size and free space checked first; SHA-256 computed while
 * streaming, ranged reads written as they arrive, fsync), verify it (digest, then the table's real
 * schema, with a checker the caller keeps warm: see `checkers.ts`), and swap it in atomically
 * (rename over the live path, fsync the directory). Download and verification are separate steps so
 * the dataset machine can show and route each. A manifest beside the live file records which
 * snapshot it holds, so a restart can serve it at once. Every value these functions return is plain
 * data (no handles), so each step can run as a task of another thread (the runtime's snapshot pool).
 *
 * Crash safety: the live path only ever changes by `rename(2)` of a complete, validated, fsynced
 * file, so a kill at any instant leaves it holding the old or the new snapshot. The manifest is
 * staged as `<live>.ferry-next.json` before the rename and promoted to `<live>.ferry.json` after
 * it; at restart the live file is matched against both (by inode and size, else by SHA-256), so a
 * manifest is only ever believed for the file it describes (same inode, mtime and size).
 */
import { createHash, randomBytes } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { type FileHandle, mkdir, open, readdir, readFile, rename, rm, stat, statfs } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import type {
  ArrowSchema,
  BlockManifest,
  EngineName,
  ObjectInfo,
  ObjectStore,
  SchemaEntry,
  SignedEnvelope,
  SnapshotEntry,
} from '@ferry/core/base';
import { SnapshotRejectedError } from '@ferry/core/base';
import { createSnapshotChecker, type SnapshotChecker } from '@ferry/engines';
import { readParallelParts } from '@ferry/store/objects';
import {
  assembleDelta,
  blocksPath,
  type HeldFile,
  isDiskFull,
  moveBlocks,
  type SnapshotTransfer,
  saveBlocks,
  writeAll,
} from './delta-download.js';
import {
  checksumMismatch,
  DiskFullError,
  InsufficientDiskSpaceError,
  PreparedSnapshotGoneError,
  sizeMismatch,
  snapshotObjectMissing,
  TruncatedDownloadError,
  unsupportedChecksumAlgorithm,
} from './errors.js';

/** What the live file holds, as recorded in its manifest. */
export interface LocalSnapshot {
  readonly snapshotId: number;
  readonly timestampMs: number;
  readonly uri: string;
  /** Lowercase hex SHA-256 of the file. */
  readonly checksum: string;
  readonly size: number;
  readonly schemaId: number;
  readonly schema: ArrowSchema;
  /**
   * The dataset's location as configured when it was loaded ({@link LiveFileOptions.location}): a
   * restart after the dataset moved to another store does not serve it (ids restart in a new store).
   */
  readonly location?: string;
  /**
   * The signature object that authenticated it before download (a dataset with trusted keys); a
   * restart checks it against the keys trusted then.
   */
  readonly signature?: SignedEnvelope;
}

/** A downloaded, not yet verified snapshot in its temporary file (fsynced, `snapshot-size` bytes). */
export interface DownloadedSnapshot {
  readonly tempPath: string;
  readonly entry: SnapshotEntry;
  /** Lowercase hex SHA-256 of the bytes written, computed while streaming. */
  readonly digest: string;
  /** Whether the bytes came whole from the store or partly from the live file (a delta download). */
  readonly transfer: SnapshotTransfer;
}

/** A downloaded and validated snapshot waiting in its temporary file to be swapped in. */
export interface PreparedSnapshot {
  readonly tempPath: string;
  readonly inode: number;
  readonly snapshot: LocalSnapshot;
}

/** The live file of one dataset and what is inside it. */
export interface LiveFileOptions {
  readonly dataset: string;
  /** The engine whose file format the snapshot has (`turso` files are SQLite files). */
  readonly engine: EngineName;
  /** The table inside the file; Spice writers name it after the dataset. */
  readonly table: string;
  /** Absolute path of the live file. Temporary files and the manifest are created beside it. */
  readonly livePath: string;
  /** The dataset's configured location, recorded with each snapshot verified ({@link LocalSnapshot.location}). */
  readonly location?: string;
}

export interface SnapshotFilesOptions extends LiveFileOptions {
  readonly store: ObjectStore;
  /** Free space to keep beyond the snapshot's size. Default 64 MiB. */
  readonly reserveBytes?: number;
  /** Ranged-read part size. Default 8 MiB. */
  readonly partSize?: number;
  /** Parts in flight at once. Default 4. */
  readonly concurrency?: number;
  /**
   * Assemble the snapshot from the live file's unchanged blocks and ranged reads of the rest when
   * it has a block manifest (`delta-download.ts`). Default true.
   */
  readonly delta?: boolean;
  /** A delta is only made when at least this share of the new file's bytes is reused. Default 0.05. */
  readonly deltaMinReuse?: number;
}

/** The snapshot to download: its metadata.json entry and its object's key in the store. */
export interface SnapshotTarget {
  readonly entry: SnapshotEntry;
  /** `resolveSnapshotKey(metadata.location, entry.uri)`: works for a store mirrored elsewhere. */
  readonly key: string;
  /** The object's HEAD when already made (beside the signature check), so it is not repeated. */
  readonly head?: ObjectInfo | undefined;
  /**
   * With signed snapshots, the block manifest's SHA-256 its writer signed (`blocks-sha256`; null:
   * it signed none): a delta uses only that manifest, else the file is downloaded whole.
   */
  readonly blocksSha256?: string | null | undefined;
}

export interface DownloadProgress {
  readonly bytes: number;
  readonly total: number;
}

export interface PrepareControl {
  readonly signal?: AbortSignal;
  readonly onProgress?: (progress: DownloadProgress) => void;
}

export interface VerifyControl {
  readonly signal?: AbortSignal;
  /**
   * The checker to use (a DuckDB one must be allowed the file's directory), kept by the caller
   * (`SnapshotCheckers`). Absent: one is made for this check and closed after it (~25 ms more).
   */
  readonly checker?: SnapshotChecker;
}

/** `staged`: the next manifest is written, the rename not done. `renamed`: the live path holds the new file, the manifest is not promoted. */
export type CommitStep = 'staged' | 'renamed';

export interface CommitControl {
  /** Awaited at each step (progress logs; tests stop a process there to prove crash safety). */
  readonly onStep?: (step: CommitStep) => void | Promise<void>;
}

const TEMP_MARK = '.ferry-tmp-';
/** Files an engine could create beside a database and mix into it: never ours, never kept. */
const SIDE_SUFFIXES = ['.wal', '-wal', '-shm', '-journal'] as const;
const DEFAULT_RESERVE = 64 * 1024 * 1024;
const DEFAULT_PART_SIZE = 8 * 1024 * 1024;
const DEFAULT_CONCURRENCY = 4;
const DEFAULT_DELTA_MIN_REUSE = 0.05;
/** Written bytes are flushed to disk in the background each time this many have accumulated. */
const WRITE_BEHIND_BYTES = 32 * 1024 * 1024;

/**
 * Flushes a file being written to disk in the background (`fdatasync`, one at a time) as the
 * download goes, so the closing fsync finds little left to write: the disk works while the
 * network does instead of after it. A failed flush (ENOSPC on a delayed allocation, EIO) fails
 * the download at the next write.
 */
class WriteBehind {
  readonly #handle: FileHandle;
  #unflushed = 0;
  #inFlight: Promise<void> | undefined;
  #error: unknown;

  constructor(handle: FileHandle) {
    this.#handle = handle;
  }

  wrote(bytes: number): void {
    if (this.#error !== undefined) throw this.#error;
    this.#unflushed += bytes;
    if (this.#unflushed < WRITE_BEHIND_BYTES || this.#inFlight !== undefined) return;
    this.#unflushed = 0;
    this.#inFlight = this.#handle.datasync().then(
      () => {
        this.#inFlight = undefined;
      },
      (error: unknown) => {
        this.#inFlight = undefined;
        this.#error ??= error;
      },
    );
  }

  /** Waits for the flush in flight; rethrows a flush's failure. */
  async settle(): Promise<void> {
    await this.#inFlight;
    if (this.#error !== undefined) throw this.#error;
  }
}

export function manifestPath(livePath: string): string {
  return `${livePath}.ferry.json`;
}

export function nextManifestPath(livePath: string): string {
  return `${livePath}.ferry-next.json`;
}

interface Manifest {
  readonly format: 1;
  readonly dataset: string;
  /** Identity of the file described (the temporary file, which the rename makes the live file). */
  readonly inode: number;
  /** Modification time in ns: an in-place rewrite keeps the inode but changes this. */
  readonly mtimeNs: string;
  readonly snapshot: LocalSnapshot;
}

interface FileIdentity {
  readonly inode: number;
  readonly mtimeNs: string;
  readonly size: number;
}

/** The file's identity, or `undefined` when there is no file at `path` (any other failure is thrown). */
async function identityOf(path: string): Promise<FileIdentity | undefined> {
  const info = await stat(path, { bigint: true }).catch((error: NodeJS.ErrnoException) => {
    if (error.code === 'ENOENT' || error.code === 'ENOTDIR') return undefined;
    throw error;
  });
  if (info === undefined || !info.isFile()) return undefined;
  return { inode: Number(info.ino), mtimeNs: String(info.mtimeNs), size: Number(info.size) };
}

function describes(manifest: Manifest, file: FileIdentity): boolean {
  return (
    manifest.inode === file.inode && manifest.mtimeNs === file.mtimeNs && manifest.snapshot.size === file.size
  );
}

function isManifest(value: unknown): value is Manifest {
  const m = value as Partial<Manifest> | null;
  const s = m?.snapshot as Partial<LocalSnapshot> | undefined;
  return (
    m?.format === 1 &&
    typeof m.inode === 'number' &&
    typeof m.mtimeNs === 'string' &&
    typeof s?.snapshotId === 'number' &&
    typeof s.checksum === 'string' &&
    typeof s.size === 'number' &&
    typeof s.uri === 'string' &&
    typeof s.schema === 'object'
  );
}

/** A manifest, or `undefined` when it is absent or unreadable (a kill while it was written). */
async function readManifest(path: string): Promise<Manifest | undefined> {
  try {
    const value: unknown = JSON.parse(await readFile(path, 'utf8'));
    return isManifest(value) ? value : undefined;
  } catch {
    return undefined;
  }
}

async function writeFileSynced(path: string, data: string): Promise<void> {
  const handle = await open(path, 'w');
  try {
    await handle.writeFile(data);
    await handle.sync();
  } finally {
    await handle.close();
  }
}

async function fsyncDirectory(directory: string): Promise<void> {
  const handle = await open(directory, 'r');
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}

async function sha256OfFile(path: string): Promise<string> {
  const hash = createHash('sha256');
  for await (const chunk of createReadStream(path)) hash.update(chunk as Buffer);
  return hash.digest('hex');
}

async function removeWithSideFiles(path: string): Promise<void> {
  await Promise.all(
    [path, blocksPath(path), ...SIDE_SUFFIXES.map((suffix) => path + suffix)].map((p) =>
      rm(p, { force: true }),
    ),
  );
}

/** The live file and the snapshot in it, when its manifest provably describes it. */
async function heldFile(livePath: string): Promise<HeldFile | undefined> {
  const manifest = await readManifest(manifestPath(livePath));
  const live = await identityOf(livePath);
  if (manifest === undefined || live === undefined || !describes(manifest, live)) return undefined;
  return { path: livePath, ...live, checksum: manifest.snapshot.checksum.toLowerCase() };
}

/**
 * Deletes temporary files a previous run left beside the live file (a kill mid-download).
 * Returns the paths removed. Must not run while a download of the same dataset is in progress.
 */
export async function removeTemporaries(livePath: string): Promise<string[]> {
  const directory = dirname(livePath);
  const prefix = `${basename(livePath)}${TEMP_MARK}`;
  let names: string[];
  try {
    names = await readdir(directory);
  } catch {
    return [];
  }
  // And the live file's block digests half written by `saveBlocks` (through `<blocks>.tmp`).
  const blocksTemp = `${basename(blocksPath(livePath))}.tmp`;
  const removed = names
    .filter((name) => name.startsWith(prefix) || name === blocksTemp)
    .map((name) => join(directory, name));
  await Promise.all(removed.map((path) => rm(path, { force: true })));
  return removed;
}

/**
 * The snapshot already in the live file from a previous run, or `null` when there is none or no
 * manifest provably describes it. Also removes temporaries of a killed run, finishes a manifest
 * promotion a kill interrupted, and deletes manifests that describe no file.
 */
export async function restoreLocal(options: LiveFileOptions): Promise<LocalSnapshot | null> {
  const { livePath } = options;
  const directory = dirname(livePath);
  await removeTemporaries(livePath);
  const current = await readManifest(manifestPath(livePath));
  const next = await readManifest(nextManifestPath(livePath));
  const forget = async (): Promise<null> => {
    await rm(manifestPath(livePath), { force: true });
    await rm(nextManifestPath(livePath), { force: true });
    return null;
  };
  const live = await identityOf(livePath);
  if (live === undefined) return forget();

  const candidates = [next, current].filter((m): m is Manifest => m !== undefined);
  const found = candidates.find((m) => describes(m, live));
  if (found !== undefined) {
    if (found === next) {
      // Killed between the rename and the promotion: finish the promotion.
      await rename(nextManifestPath(livePath), manifestPath(livePath));
      await fsyncDirectory(directory);
    } else {
      await rm(nextManifestPath(livePath), { force: true });
    }
    await removeSideFiles(livePath);
    return found.snapshot;
  }

  // Copied or restored by other means (new inode): only its content can prove what it is.
  const sameSize = candidates.filter((m) => m.snapshot.size === live.size);
  if (sameSize.length === 0) return forget();
  const digest = await sha256OfFile(livePath);
  const byContent = sameSize.find((m) => m.snapshot.checksum === digest);
  if (byContent === undefined) return forget();
  const manifest: Manifest = { ...byContent, inode: live.inode, mtimeNs: live.mtimeNs };
  await writeFileSynced(nextManifestPath(livePath), JSON.stringify(manifest));
  await rename(nextManifestPath(livePath), manifestPath(livePath));
  await fsyncDirectory(directory);
  await removeSideFiles(livePath);
  return byContent.snapshot;
}

async function removeSideFiles(livePath: string): Promise<void> {
  await Promise.all(SIDE_SUFFIXES.map((suffix) => rm(livePath + suffix, { force: true })));
}

async function assertFreeSpace(
  options: SnapshotFilesOptions,
  directory: string,
  size: number,
): Promise<void> {
  const needed = size + (options.reserveBytes ?? DEFAULT_RESERVE);
  const space = await statfs(directory);
  const available = space.bavail * space.bsize;
  if (available < needed) throw new InsufficientDiskSpaceError(options.dataset, directory, needed, available);
}

/** Stream the object into `handle`, hashing as it goes; returns the lowercase hex digest. */
async function download(
  options: SnapshotFilesOptions,
  target: SnapshotTarget,
  handle: FileHandle,
  writeBehind: WriteBehind,
  control: PrepareControl,
): Promise<string> {
  const { entry, key } = target;
  const hash = createHash('sha256');
  let received = 0;
  const parts = readParallelParts(options.store, key, {
    size: entry.size,
    partSize: options.partSize ?? DEFAULT_PART_SIZE,
    concurrency: options.concurrency ?? DEFAULT_CONCURRENCY,
    ...(control.signal === undefined ? {} : { signal: control.signal }),
  })[Symbol.asyncIterator]();
  try {
    for (let step = await parts.next(); step.done !== true; step = await parts.next()) {
      const chunks = step.value;
      let bytes = 0;
      for (const chunk of chunks) bytes += chunk.byteLength;
      received += bytes;
      if (received > entry.size) throw sizeMismatch(entry.uri, entry.size, received);
      for (const chunk of chunks) hash.update(chunk);
      await writeAll(handle, chunks, bytes);
      writeBehind.wrote(bytes);
      control.onProgress?.({ bytes: received, total: entry.size });
      control.signal?.throwIfAborted();
    }
  } catch (error) {
    // Ends the parts still in flight (a no-op when the reads themselves failed).
    await parts.return(undefined).catch(() => undefined);
    if ((error as { code?: unknown }).code === 'ERR_OBJECT_NOT_FOUND') {
      throw snapshotObjectMissing(options.dataset, entry.uri, { cause: error });
    }
    throw error;
  }
  if (received !== entry.size)
    throw new TruncatedDownloadError(options.dataset, entry.uri, entry.size, received);
  return hash.digest('hex');
}

/**
 * Step 5 of the spec's validation on the downloaded file. Rejections name the snapshot's URI, not
 * the temporary file, which is deleted right after.
 */
async function checkDownloadedFile(
  options: LiveFileOptions,
  checker: SnapshotChecker,
  uri: string,
  schema: ArrowSchema,
  tempPath: string,
): Promise<void> {
  try {
    await checker.check(tempPath, options.table, schema);
  } catch (error) {
    if (error instanceof SnapshotRejectedError) {
      const code = error.code as ConstructorParameters<typeof SnapshotRejectedError>[0];
      throw new SnapshotRejectedError(code, error.message.replaceAll(tempPath, uri), {
        cause: error,
      });
    }
    throw error;
  }
}

/**
 * Downloads a snapshot into a temporary sibling of the live file: checks the checksum algorithm,
 * the object's size (HEAD) and free space before requesting or writing a
 * byte, streams the object (hashing as it goes, failing on more or fewer bytes than
 * `snapshot-size`) and fsyncs it. Nothing is verified
 * beyond the byte count: hand the result to {@link verifySnapshot} before swapping it in. The live
 * file is never touched; on any failure (or abort) the temporary file is deleted.
 */
export async function downloadSnapshot(
  options: SnapshotFilesOptions,
  target: SnapshotTarget,
  control: PrepareControl = {},
): Promise<DownloadedSnapshot> {
  const { livePath, dataset } = options;
  const { entry, key } = target;
  const uri = entry.uri;
  if (entry.checksumAlgorithm.toUpperCase() !== 'SHA256') {
    throw unsupportedChecksumAlgorithm(uri, entry.checksumAlgorithm);
  }
  // The HEAD comes before any ranged read: a missing object or a wrong (possibly absurd) recorded
  // size costs one request, never a byte of download (test/reliability/validation-faults.test.ts).
  const info = target.head ?? (await options.store.head(key));
  if (info === undefined) throw snapshotObjectMissing(dataset, uri);
  if (info.size !== entry.size) throw sizeMismatch(uri, entry.size, info.size);

  const directory = dirname(livePath);
  await mkdir(directory, { recursive: true });
  await assertFreeSpace(options, directory, entry.size);
  control.signal?.throwIfAborted();

  const tempPath = `${livePath}${TEMP_MARK}${entry.snapshotId}-${randomBytes(4).toString('hex')}`;
  const handle = await open(tempPath, 'wx');
  const writeBehind = new WriteBehind(handle);
  let closed = false;
  try {
    let digest: string | undefined;
    let transfer: SnapshotTransfer | undefined;
    let fallback: Pick<SnapshotTransfer, 'fallback' | 'doubtful'> = {};
    let blocks: BlockManifest | undefined;
    if (options.delta !== false) {
      const outcome = await assembleDelta(
        {
          store: options.store,
          key,
          uri,
          size: entry.size,
          checksum: entry.checksum,
          held: await heldFile(livePath),
          ...(target.blocksSha256 === undefined ? {} : { blocksSha256: target.blocksSha256 }),
          concurrency: options.concurrency ?? DEFAULT_CONCURRENCY,
          partSize: options.partSize ?? DEFAULT_PART_SIZE,
          minReuse: options.deltaMinReuse ?? DEFAULT_DELTA_MIN_REUSE,
          wrote: (bytes) => writeBehind.wrote(bytes),
          ...(control.signal === undefined ? {} : { signal: control.signal }),
          ...(control.onProgress === undefined
            ? {}
            : { onProgress: (bytes: number) => control.onProgress?.({ bytes, total: entry.size }) }),
        },
        handle,
      );
      blocks = outcome.manifest;
      if (outcome.kind === 'assembled') {
        digest = outcome.digest;
        transfer = outcome.transfer;
      } else {
        fallback = { fallback: outcome.reason, doubtful: outcome.doubtful };
        // Whatever the delta wrote goes; the full download appends from position 0 (never moved).
        await writeBehind.settle();
        await handle.truncate(0);
      }
    }
    if (digest === undefined) {
      digest = await download(options, target, handle, writeBehind, control);
      transfer = { mode: 'full', fetchedBytes: entry.size, reusedBytes: 0, ...fallback };
    }
    await writeBehind.settle();
    await handle.sync();
    closed = true;
    await handle.close();
    control.signal?.throwIfAborted();
    // Kept with the file for the next delta; only for the bytes it describes.
    if (blocks !== undefined && digest === blocks.checksum) await saveBlocks(blocksPath(tempPath), blocks);
    return { tempPath, entry, digest, transfer: transfer as SnapshotTransfer };
  } catch (error) {
    if (!closed) {
      // The download's own failure is what is thrown; a flush or close failing after it adds nothing.
      await writeBehind.settle().catch(() => undefined);
      await handle.close().catch(() => undefined);
    }
    await removeWithSideFiles(tempPath);
    if (isDiskFull(error)) throw new DiskFullError(dataset, directory, { cause: error });
    throw error;
  }
}

/**
 * Verifies a downloaded snapshot: its SHA-256 digest against `snapshot-checksum`, then the table's
 * real schema (the file read by its engine) against the recorded one. Returns it ready to swap
 * in. On any failure (or abort) the temporary file is deleted; the live file is never touched.
 */
export async function verifySnapshot(
  options: LiveFileOptions,
  downloaded: DownloadedSnapshot,
  recorded: SchemaEntry,
  control: VerifyControl = {},
): Promise<PreparedSnapshot> {
  const { tempPath, entry, digest } = downloaded;
  const uri = entry.uri;
  const own =
    control.checker === undefined ? createSnapshotChecker(options.engine, dirname(tempPath)) : undefined;
  // Observed below (awaited, or closed in `finally` after an earlier failure).
  own?.catch(() => undefined);
  try {
    control.signal?.throwIfAborted();
    if (digest !== entry.checksum.toLowerCase()) throw checksumMismatch(uri, entry.checksum, digest);
    const checker = control.checker ?? (await (own as Promise<SnapshotChecker>));
    await checkDownloadedFile(options, checker, uri, recorded.schema, tempPath);
    control.signal?.throwIfAborted();
    const { ino } = await stat(tempPath);
    return {
      tempPath,
      inode: ino,
      snapshot: {
        snapshotId: entry.snapshotId,
        timestampMs: entry.timestampMs,
        uri,
        checksum: digest,
        size: entry.size,
        schemaId: recorded.schemaId,
        schema: recorded.schema,
        ...(options.location === undefined ? {} : { location: options.location }),
      },
    };
  } catch (error) {
    await removeWithSideFiles(tempPath);
    throw error;
  } finally {
    await closeChecker(own);
  }
}

/** Closes a checker once it is made (one that failed to be made has nothing to close). */
async function closeChecker(checker: Promise<SnapshotChecker> | undefined): Promise<void> {
  await checker?.then(
    (made) => made.close(),
    // A checker that could not be made failed its check already; there is nothing to close.
    () => undefined,
  );
}

/**
 * Swaps a prepared snapshot in: stage the manifest, rename over the live path (atomic), fsync the
 * directory, promote the manifest. Readers that already hold the old file keep reading it until
 * they close it; engines attach the new file (or a generation link of it) afterwards.
 */
export async function commitSnapshot(
  options: LiveFileOptions,
  prepared: PreparedSnapshot,
  control: CommitControl = {},
): Promise<LocalSnapshot> {
  return commitFile(options, prepared, control);
}

async function commitFile(
  options: LiveFileOptions,
  prepared: PreparedSnapshot,
  control: CommitControl = {},
): Promise<LocalSnapshot> {
  const { livePath } = options;
  const directory = dirname(livePath);
  const file = await identityOf(prepared.tempPath);
  if (file === undefined || file.inode !== prepared.inode || file.size !== prepared.snapshot.size) {
    throw new PreparedSnapshotGoneError(options.dataset, prepared.tempPath);
  }
  const manifest: Manifest = {
    format: 1,
    dataset: options.dataset,
    inode: file.inode,
    mtimeNs: file.mtimeNs,
    snapshot: prepared.snapshot,
  };
  await writeFileSynced(nextManifestPath(livePath), JSON.stringify(manifest));
  await control.onStep?.('staged');
  await removeSideFiles(livePath);
  await rename(prepared.tempPath, livePath);
  await fsyncDirectory(directory);
  await control.onStep?.('renamed');
  // Only a hint for the next delta download: it is believed for the file whose SHA-256 it names.
  await moveBlocks(prepared.tempPath, livePath);
  await rename(nextManifestPath(livePath), manifestPath(livePath));
  await fsyncDirectory(directory);
  return prepared.snapshot;
}

/**
 * Checks that the live file a manifest named ({@link restoreLocal}) is read by its engine, has the
 * table and the recorded schema: the restore's last step before the file is served again. Rejects
 * as the download's check does (`ERR_SNAPSHOT_*`, naming the live path).
 */
export async function checkLiveFile(
  options: LiveFileOptions,
  schema: ArrowSchema,
  control: Pick<VerifyControl, 'checker'> = {},
): Promise<void> {
  const own =
    control.checker === undefined
      ? createSnapshotChecker(options.engine, dirname(options.livePath))
      : undefined;
  try {
    const checker = control.checker ?? (await (own as Promise<SnapshotChecker>));
    await checker.check(options.livePath, options.table, schema);
  } finally {
    await closeChecker(own);
  }
}

/**
 * Deletes a downloaded or prepared snapshot that will not be swapped in (a stop, a superseded
 * download, a file the verification step never received).
 */
export async function discardPrepared(prepared: Pick<PreparedSnapshot, 'tempPath'>): Promise<void> {
  await removeWithSideFiles(prepared.tempPath);
}
