/**
 * The block manifest sidecar of a published snapshot (`<snapshot key>.ferry-blocks.json`, the
 * format of `@ferry/core`'s `block-manifest.ts`): uploaded after the snapshot and before
 * metadata.json names it, so a reader that sees the snapshot current finds its manifest too. Spice
 * readers never read it.
 */
import { createHash } from 'node:crypto';
import {
  blockManifestKey,
  type FileFormat,
  type ObjectStore,
  serializeBlockManifest,
} from '@ferry/core/base';
import type { UploadedSnapshot } from './upload.js';
import { deleteUnreferenced } from './upload.js';

/**
 * Uploads the manifest of `uploaded`; returns its key and the SHA-256 of its bytes (what a signed
 * statement's `blocks-sha256` covers). On failure the snapshot object is deleted again.
 */
export async function putBlockManifest(
  store: ObjectStore,
  uploaded: UploadedSnapshot,
  engine: FileFormat,
): Promise<{ readonly key: string; readonly sha256: string }> {
  const key = blockManifestKey(uploaded.key);
  const bytes = new TextEncoder().encode(serializeBlockManifest(uploaded.blocks, engine));
  try {
    await store.put(key, bytes, { contentType: 'application/json' });
  } catch (error) {
    // Nothing references the snapshot yet: take it back, the publish's error follows.
    await deleteUnreferenced(store, uploaded.key);
    throw error;
  }
  return { key, sha256: createHash('sha256').update(bytes).digest('hex') };
}
