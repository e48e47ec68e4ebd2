/**
 * Maps a dataset's configuration to the adapters it needs: the object store of its location (one
 * per location and credentials, shared by the datasets on it) and where its live file goes.
 */
import { isAbsolute, join, resolve } from 'node:path';
import type { DatasetConfig, ObjectStore, S3Settings } from '@ferry/core/base';
import { createObjectStore, type ObjectStoreParams } from '@ferry/store/objects';

export function storeParams(s3: S3Settings | undefined): ObjectStoreParams {
  if (s3 === undefined) return {};
  return {
    auth: s3.auth,
    allowHttp: s3.allowHttp,
    ...(s3.region === undefined ? {} : { region: s3.region }),
    ...(s3.endpoint === undefined ? {} : { endpoint: s3.endpoint }),
    ...(s3.clientTimeoutMs === undefined ? {} : { clientTimeoutMs: s3.clientTimeoutMs }),
    ...(s3.credentials === undefined
      ? {}
      : {
          accessKeyId: s3.credentials.accessKeyId,
          secretAccessKey: s3.credentials.secretAccessKey,
          ...(s3.credentials.sessionToken === undefined ? {} : { sessionToken: s3.credentials.sessionToken }),
        }),
  };
}

/** Where a dataset's objects are: its location and the S3 settings to reach it. */
export type StoreSource = Pick<DatasetConfig, 'location'> & { readonly s3?: S3Settings | undefined };

export function storeFor(dataset: StoreSource): ObjectStore {
  return createObjectStore(dataset.location, storeParams(dataset.s3));
}

/** Identifies a (location, credentials) pair: datasets with the same key share one store and reader. */
export function storeKey(dataset: StoreSource): string {
  const s3 = dataset.s3;
  return JSON.stringify([
    dataset.location,
    s3?.endpoint ?? null,
    s3?.region ?? null,
    s3?.credentials?.accessKeyId ?? null,
    s3?.credentials?.sessionToken ?? null,
  ]);
}

/** The live file: the dataset's file param (relative to the spicepod's folder), else `<dataDir>/<name>.<engine>` (`.db` without one). */
export function livePathFor(dataset: DatasetConfig, baseDir: string, dataDir: string): string {
  if (dataset.liveFile !== undefined) {
    return isAbsolute(dataset.liveFile) ? dataset.liveFile : resolve(baseDir, dataset.liveFile);
  }
  return join(resolve(baseDir, dataDir), `${dataset.name}.${dataset.engine ?? 'db'}`);
}
