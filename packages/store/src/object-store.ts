/** Choose the `ObjectStore` adapter for a location by its scheme (`s3://` or `file://`). */
import type { ObjectStore } from '@ferry/core/base';
import { deferredStore } from './deferred-store.js';
import { StoreConfigError } from './errors.js';
import { createFileStore, type FileStoreOptions } from './file-store.js';
import { checkS3Options, type S3StoreOptions } from './s3-config.js';

/** Adapter parameters; each adapter reads the ones it knows and ignores the rest. */
export type ObjectStoreParams = Omit<S3StoreOptions, 'location'> & Omit<FileStoreOptions, 'location'>;

export function createObjectStore(location: string, params: ObjectStoreParams = {}): ObjectStore {
  const scheme = /^([a-z][a-z0-9+.-]*):/i.exec(location)?.[1]?.toLowerCase();
  if (scheme === 's3') {
    const options = { ...params, location };
    // Refused here, when configured; the SDK loads on the first request.
    const { location: uri } = checkS3Options(options);
    return deferredStore(uri, async () => (await import('./s3-store.js')).createS3Store(options));
  }
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
