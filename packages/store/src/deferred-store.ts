/**
 * An `ObjectStore` whose adapter is made on its first request: `createObjectStore` hands one out for
 * an `s3://` location, so that its module imports the S3 adapter (and the SDK) only when an `s3://`
 * store is used. A thread on a `file://` store never loads the SDK; one that holds an `s3://` store
 * loads it on the first read. Each request awaits the one load; `close()` closes the adapter if it
 * was made.
 */
import type { ObjectStore } from '@ferry/core/base';

export function deferredStore(location: string, load: () => Promise<ObjectStore>): ObjectStore {
  let loaded: Promise<ObjectStore> | undefined;
  const store = (): Promise<ObjectStore> => {
    loaded ??= load();
    return loaded;
  };
  return {
    location,
    get: async (key, options) => (await store()).get(key, options),
    async *read(key, options) {
      yield* (await store()).read(key, options);
    },
    head: async (key) => (await store()).head(key),
    put: async (key, body, options) => (await store()).put(key, body, options),
    async *list(prefix) {
      yield* (await store()).list(prefix);
    },
    delete: async (key) => (await store()).delete(key),
    async close() {
      if (loaded !== undefined) await (await loaded).close();
    },
  };
}
