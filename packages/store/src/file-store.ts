/**
 * The file:// adapter of the `ObjectStore` port: a directory as a bucket, for local development and
 * the embedded default. It keeps the S3 semantics the runtime relies on: ETags change on every
 * rewrite (size + mtime in ns + inode, from stat), a conditional get answers 'unchanged' without
 * reading, a put is atomic (temporary sibling, fsync, rename, fsync of the directory), and a
 * conditional put is atomic against concurrent writers (a per-object lock file, see file-lock.ts).
 */
import { randomUUID } from 'node:crypto';
import type { BigIntStats, Dirent, Stats } from 'node:fs';
import { type FileHandle, mkdir, open, readdir, rename, rm, stat } from 'node:fs/promises';
import { dirname, join, resolve, sep } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import {
  assertKey,
  assertPrefix,
  FerryError,
  type GetOptions,
  type GetResult,
  keyProblem,
  type ObjectInfo,
  type ObjectStore,
  type PutOptions,
  type ReadOptions,
} from '@ferry/core/base';
import {
  ObjectNotFoundError,
  ObjectTooLargeError,
  PreconditionFailedError,
  StoreConfigError,
  StoreError,
  type StoreOperation,
} from './errors.js';
import { LockTimeoutError, withLock } from './file-lock.js';

export interface FileStoreOptions {
  /** `file:///abs/dir/`. */
  readonly location: string;
  /** How long a put waits for another writer's lock on the same object. Default 10 s. */
  readonly lockTimeoutMs?: number;
  /** A lock file older than this is abandoned and broken. Default 30 s. */
  readonly staleLockMs?: number;
}

export interface FileObjectStore extends ObjectStore {
  /** The absolute directory the location names. */
  readonly root: string;
}

const TEMP_SUFFIX = '.ferry-tmp';
const LOCK_SUFFIX = '.ferry-lock';
const READ_CHUNK = 1024 * 1024;

function errnoOf(error: unknown): string | undefined {
  return (error as NodeJS.ErrnoException | undefined)?.code;
}

const MISSING = new Set(['ENOENT', 'ENOTDIR']);
const TRANSIENT = new Set(['EAGAIN', 'EBUSY', 'EMFILE', 'ENFILE', 'EINTR', 'ETIMEDOUT']);

/** The ETag of a file: changes whenever a rewrite changes its size, mtime or inode. */
export function fileEtag(info: BigIntStats): string {
  return `"${info.size.toString(16)}-${info.mtimeNs.toString(16)}-${info.ino.toString(16)}"`;
}

function normaliseEtag(etag: string): string {
  return etag
    .trim()
    .replace(/^W\//, '')
    .replace(/^"(.*)"$/, '$1');
}

function isInternal(name: string): boolean {
  return name.startsWith('.') && (name.endsWith(TEMP_SUFFIX) || name.endsWith(LOCK_SUFFIX));
}

async function fsyncDir(dir: string): Promise<void> {
  let handle: FileHandle | undefined;
  try {
    handle = await open(dir, 'r');
    await handle.sync();
  } catch (error) {
    // Some filesystems (and platforms) cannot fsync a directory; the rename is still atomic there.
    if (!['EISDIR', 'EINVAL', 'EPERM', 'ENOTSUP'].includes(errnoOf(error) ?? '')) throw error;
  } finally {
    await handle?.close();
  }
}

function rootOf(location: string): string {
  let url: URL;
  try {
    url = new URL(location);
  } catch (cause) {
    throw new StoreConfigError(
      'location',
      `Store location '${location}' is not a URI; give file:///absolute/dir/.`,
      {
        cause,
      },
    );
  }
  if (url.protocol !== 'file:' || (url.host !== '' && url.host !== 'localhost')) {
    throw new StoreConfigError(
      'location',
      `Store location '${location}' is not a local file:// URI; give file:///absolute/dir/.`,
    );
  }
  try {
    return resolve(fileURLToPath(url));
  } catch (cause) {
    throw new StoreConfigError(
      'location',
      `Store location '${location}' is not a usable file path; give file:///absolute/dir/.`,
      {
        cause,
      },
    );
  }
}

/** An `ObjectStore` on a local directory (`file:///abs/dir/`). */
export function createFileStore(options: FileStoreOptions): FileObjectStore {
  const root = rootOf(options.location);
  const href = pathToFileURL(root).href;
  const location = href.endsWith('/') ? href : `${href}/`;
  const lockOptions = { timeoutMs: options.lockTimeoutMs ?? 10_000, staleMs: options.staleLockMs ?? 30_000 };
  const uriOf = (key: string): string => `${location}${key}`;
  const pathOf = (key: string): string => join(root, ...assertKey(key, location).split('/'));

  function fail(error: unknown, operation: StoreOperation, key: string, signal?: AbortSignal): Error {
    if (signal?.aborted === true)
      return signal.reason instanceof Error ? signal.reason : new Error(String(signal.reason));
    if (error instanceof FerryError) return error;
    if (error instanceof LockTimeoutError) {
      return new StoreError(
        {
          operation,
          uri: uriOf(key),
          retryable: true,
          reason: `another writer held ${error.lockPath} too long`,
        },
        { cause: error },
      );
    }
    const code = errnoOf(error);
    const reason = error instanceof Error ? error.message : String(error);
    return new StoreError(
      { operation, uri: uriOf(key), retryable: code !== undefined && TRANSIENT.has(code), reason },
      { cause: error },
    );
  }

  async function head(key: string): Promise<ObjectInfo | undefined> {
    const path = pathOf(key);
    try {
      const info = await stat(path, { bigint: true });
      if (!info.isFile()) return undefined;
      return { key, size: Number(info.size), etag: fileEtag(info) };
    } catch (error) {
      if (MISSING.has(errnoOf(error) ?? '')) return undefined;
      throw fail(error, 'head', key);
    }
  }

  async function writeBody(handle: FileHandle, body: Uint8Array | AsyncIterable<Uint8Array>): Promise<void> {
    if (body instanceof Uint8Array) {
      await handle.writeFile(body);
      return;
    }
    for await (const chunk of body) {
      let offset = 0;
      while (offset < chunk.byteLength) {
        const { bytesWritten } = await handle.write(chunk, offset, chunk.byteLength - offset);
        offset += bytesWritten;
      }
    }
  }

  async function checkCondition(path: string, key: string, o: PutOptions): Promise<void> {
    if (o.ifMatch === undefined && o.ifNoneMatch === undefined) return;
    let current: string | undefined;
    try {
      const info = await stat(path, { bigint: true });
      if (info.isFile()) current = fileEtag(info);
    } catch (error) {
      if (!MISSING.has(errnoOf(error) ?? '')) throw error;
    }
    if (o.ifNoneMatch === '*' && current !== undefined) {
      throw new PreconditionFailedError(uriOf(key), 'If-None-Match * (the object must not exist)', undefined);
    }
    if (
      o.ifMatch !== undefined &&
      (current === undefined || normaliseEtag(current) !== normaliseEtag(o.ifMatch))
    ) {
      throw new PreconditionFailedError(uriOf(key), `If-Match ${o.ifMatch}`, undefined);
    }
  }

  async function* walk(dir: string): AsyncGenerator<string> {
    let entries: Dirent[];
    try {
      entries = await readdir(dir, { withFileTypes: true });
    } catch (error) {
      if (MISSING.has(errnoOf(error) ?? '')) return;
      throw error;
    }
    for (const entry of entries) {
      const path = join(dir, entry.name);
      if (entry.isDirectory()) yield* walk(path);
      else if (!isInternal(entry.name) && (entry.isFile() || entry.isSymbolicLink())) yield path;
    }
  }

  return {
    location,
    root,

    async get(key: string, o: GetOptions = {}): Promise<GetResult> {
      const path = pathOf(key);
      let handle: FileHandle | undefined;
      try {
        o.signal?.throwIfAborted();
        try {
          handle = await open(path, 'r');
        } catch (error) {
          if (MISSING.has(errnoOf(error) ?? '')) return { status: 'not-found' };
          throw error;
        }
        // Stat the open handle: the bytes read below belong to exactly this ETag.
        const info = await handle.stat({ bigint: true });
        if (!info.isFile()) return { status: 'not-found' };
        const etag = fileEtag(info);
        if (o.ifNoneMatch !== undefined && normaliseEtag(o.ifNoneMatch) === normaliseEtag(etag)) {
          return { status: 'unchanged', etag };
        }
        const size = Number(info.size);
        if (o.maxBytes !== undefined && size > o.maxBytes)
          throw new ObjectTooLargeError(uriOf(key), size, o.maxBytes);
        const body = await handle.readFile(o.signal === undefined ? {} : { signal: o.signal });
        return { status: 'ok', body: new Uint8Array(body.buffer, body.byteOffset, body.byteLength), etag };
      } catch (error) {
        throw fail(error, 'get', key, o.signal);
      } finally {
        await handle?.close();
      }
    },

    async *read(key: string, o: ReadOptions = {}): AsyncGenerator<Uint8Array> {
      const path = pathOf(key);
      let handle: FileHandle;
      try {
        handle = await open(path, 'r');
        const info: Stats = await handle.stat();
        if (!info.isFile()) {
          await handle.close();
          throw new ObjectNotFoundError(uriOf(key));
        }
      } catch (error) {
        if (MISSING.has(errnoOf(error) ?? '')) throw new ObjectNotFoundError(uriOf(key), { cause: error });
        throw fail(error, 'read', key, o.signal);
      }
      try {
        let position = o.start ?? 0;
        const end = o.end ?? Number.POSITIVE_INFINITY;
        while (position < end) {
          o.signal?.throwIfAborted();
          const length = Math.min(READ_CHUNK, end - position);
          const buffer = new Uint8Array(length);
          const { bytesRead } = await handle.read(buffer, 0, length, position);
          if (bytesRead === 0) break;
          position += bytesRead;
          yield bytesRead === length ? buffer : buffer.subarray(0, bytesRead);
        }
      } catch (error) {
        throw fail(error, 'read', key, o.signal);
      } finally {
        await handle.close();
      }
    },

    head,

    async put(key, body, o = {}) {
      const path = pathOf(key);
      const dir = dirname(path);
      const name = path.slice(dir.length + 1);
      const temp = join(dir, `.${name}.${randomUUID()}${TEMP_SUFFIX}`);
      let committed = false;
      try {
        await mkdir(dir, { recursive: true });
        const handle = await open(temp, 'wx', 0o644);
        let info: BigIntStats;
        try {
          await writeBody(handle, body);
          await handle.sync();
          info = await handle.stat({ bigint: true });
        } finally {
          await handle.close();
        }
        await withLock(join(dir, `.${name}${LOCK_SUFFIX}`), lockOptions, async () => {
          await checkCondition(path, key, o);
          await rename(temp, path);
          committed = true;
        });
        await fsyncDir(dir);
        // rename keeps size, mtime and inode, so the temporary file's ETag is the object's.
        return { etag: fileEtag(info) };
      } catch (error) {
        throw fail(error, 'put', key);
      } finally {
        if (!committed) await rm(temp, { force: true });
      }
    },

    async *list(prefix = '') {
      assertPrefix(prefix, location);
      const slash = prefix.lastIndexOf('/');
      const start = slash === -1 ? root : join(root, ...prefix.slice(0, slash).split('/'));
      const keys: ObjectInfo[] = [];
      try {
        for await (const path of walk(start)) {
          const key = path
            .slice(root.length + 1)
            .split(sep)
            .join('/');
          if (!key.startsWith(prefix) || keyProblem(key) !== undefined) continue;
          const info = await head(key);
          if (info !== undefined) keys.push(info);
        }
      } catch (error) {
        throw fail(error, 'list', prefix);
      }
      keys.sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
      yield* keys;
    },

    async delete(key) {
      const path = pathOf(key);
      const dir = dirname(path);
      const name = path.slice(dir.length + 1);
      try {
        await withLock(join(dir, `.${name}${LOCK_SUFFIX}`), lockOptions, async () => {
          await rm(path, { force: true });
        });
      } catch (error) {
        if (MISSING.has(errnoOf(error) ?? '')) return;
        throw fail(error, 'delete', key);
      }
    },

    async close() {},
  };
}
