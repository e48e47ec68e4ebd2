/** Choose the `ObjectStore` adapter for a location by its scheme (`s3://` or `file://`). */
import type { ObjectStore } from '@ferry/core';
import { StoreConfigError } from './errors.js';
import { createFileStore, type FileStoreOptions } from './file-store.js';
import { createS3Store, type S3StoreOptions } from './s3-store.js';

/** Adapter parameters; each adapter reads the ones it knows and ignores the rest. */
export type ObjectStoreParams = Omit<S3StoreOptions, 'location'> & Omit<FileStoreOptions, 'location'>;

export function createObjectStore(location: string, params: ObjectStoreParams = {}): ObjectStore {
  const scheme = /^([a-z][a-z0-9+.-]*):/i.exec(location)?.[1]?.toLowerCase();
  if (scheme === 's3') return createS3Store({ ...params, location });
  if (scheme === 'file') {
    return createFileStore({
      location,
      ...(params.lockTimeoutMs === undefined ? {} : { lockTimeoutMs: params.lockTimeoutMs }),
      ...(params.staleLockMs === undefined ? {} : { staleLockMs: params.staleLockMs }),
    });
  }
  throw new StoreConfigError(
    'location',
    `Store location '${location}' has ${scheme === undefined ? 'no scheme' : `unsupported scheme '${scheme}:'`}; use s3://bucket/prefix/ or file:///absolute/dir/.`,
  );
}
