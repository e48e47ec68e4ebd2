/**
 * Step 1 of publishing: upload the snapshot file to a fresh dated key, hashing it with SHA-256 in
 * the same pass that streams it to the store (multipart above one part: the S3 store uses
 * @aws-sdk/lib-storage; the expected size lets it keep a huge file within S3's 10,000 parts).
 *
 * A key is never overwritten: the put is `If-None-Match: *` (after a HEAD, for stores that ignore
 * the condition), and when the key of this second is taken the writer waits for the next second
 * and takes the key of that, so a key's timestamp is always the real time of its upload.
 */
import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { setTimeout as delay } from 'node:timers/promises';
import {
  type BlockManifest,
  blockLayoutFor,
  FerryError,
  type FileFormat,
  type ObjectStore,
} from '@ferry/core/base';
import { BlockDigester } from '@ferry/store';
import { SnapshotFileError, SnapshotKeyTakenError } from './errors.js';
import { snapshotKey } from './snapshot-key.js';

/** Called as bytes reach the store: bytes sent so far, total file size. */
export type ProgressCallback = (bytes: number, total: number) => void;

export interface UploadInput {
  readonly store: ObjectStore;
  readonly dataset: string;
  readonly engine: FileFormat;
  readonly path: string;
  readonly size: number;
  readonly onProgress?: ProgressCallback;
  /** Keys tried before giving up (each after waiting for the next second). Default 5. */
  readonly keyAttempts?: number;
}

export interface UploadedSnapshot {
  readonly key: string;
  readonly uri: string;
  /** When the key's timestamp was taken (epoch ms). */
  readonly timeMs: number;
  readonly size: number;
  /** Lowercase hex SHA-256 of the bytes sent. */
  readonly checksum: string;
  /** The SHA-256 of each block of the bytes sent (`blockLayoutFor(engine)`), for the sidecar. */
  readonly blocks: BlockManifest;
}

async function* hashed(
  path: string,
  onChunk: (chunk: Uint8Array) => void,
): AsyncGenerator<Uint8Array, void, undefined> {
  for await (const chunk of createReadStream(path, { highWaterMark: 1024 * 1024 })) {
    const bytes = chunk as Buffer;
    onChunk(bytes);
    yield bytes;
  }
}

function untilNextSecond(): Promise<void> {
  return delay(1001 - (Date.now() % 1000));
}

function isPreconditionFailed(error: unknown): boolean {
  return error instanceof FerryError && error.code === 'ERR_PRECONDITION_FAILED';
}

/** Upload `path` to a new dated key of `dataset`, returning where it went and its SHA-256. */
/**
 * Deletes an object this publish uploaded that no metadata.json references: it lost every race for
 * metadata.json, its schema was refused, or its file changed while it was uploaded. When the delete
 * fails too, nothing is lost: readers load only what metadata.json names, so the object is never
 * served, and the publish's own error, which the caller throws next, is the one to act on; the
 * object only costs storage until a lifecycle rule or an operator removes it.
 */
export async function deleteUnreferenced(store: ObjectStore, key: string): Promise<void> {
  try {
    await store.delete(key);
  } catch {
    // As said above: an unreferenced object is invisible to readers; the caller's error follows.
  }
}

export async function uploadSnapshot(input: UploadInput): Promise<UploadedSnapshot> {
  const { store, dataset, engine, path, size } = input;
  const attempts = input.keyAttempts ?? 5;
  let key = '';
  for (let attempt = 1; attempt <= attempts; attempt++) {
    if (attempt > 1) await untilNextSecond();
    const timeMs = Date.now();
    key = snapshotKey(dataset, engine, timeMs);
    if ((await store.head(key)) !== undefined) continue;

    const hash = createHash('sha256');
    const layout = blockLayoutFor(engine);
    const digester = new BlockDigester(layout);
    let sent = 0;
    try {
      await store.put(
        key,
        hashed(path, (chunk) => {
          hash.update(chunk);
          digester.update(chunk);
          sent += chunk.byteLength;
          input.onProgress?.(sent, size);
        }),
        { ifNoneMatch: '*', contentType: 'application/octet-stream', size },
      );
    } catch (error) {
      if (isPreconditionFailed(error)) continue;
      throw error;
    }
    if (sent !== size) {
      await deleteUnreferenced(store, key);
      throw new SnapshotFileError(
        path,
        `it changed size while uploading to '${key}' (${size} → ${sent} bytes)`,
      );
    }
    const checksum = hash.digest('hex');
    return {
      key,
      uri: `${store.location}${key}`,
      timeMs,
      size: sent,
      checksum,
      blocks: { ...layout, size: sent, checksum, blocks: digester.digest() },
    };
  }
  throw new SnapshotKeyTakenError(dataset, store.location, key, attempts);
}
