/**
 * One metadata.json write that makes a batch of snapshot files current (B5's publishes): each
 * file described (bytes, the table's schema, SHA-256) and given a dated key, then every entry
 * appended to the document. Used for the local S3 (`aws-process.ts`) and for a `file://` store.
 */
import { createHash } from 'node:crypto';
import { mkdir, readFile, rename, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { appendSnapshot, type FileFormat } from '@ferry/core';
import { openEngine } from '@ferry/engines';
import { snapshotKey } from '@ferry/writer';
import type { BatchItem } from './aws-protocol.js';

export async function describeItem(item: BatchItem) {
  const bytes = await readFile(item.file);
  const engine = await openEngine(item.engine, item.file, { table: item.dataset });
  try {
    return {
      bytes,
      schema: await engine.schema(item.dataset),
      checksum: createHash('sha256').update(bytes).digest('hex'),
    };
  } finally {
    await engine.close();
  }
}

/** A dated key per dataset, at least a second after its previous one (keys of one dataset never collide). */
export function datedKey(lastKeyTime: Map<string, number>, item: BatchItem): { key: string; timeMs: number } {
  const timeMs = Math.max(Date.now(), (lastKeyTime.get(item.dataset) ?? 0) + 1000);
  lastKeyTime.set(item.dataset, timeMs);
  return { key: snapshotKey(item.dataset, item.engine as FileFormat, timeMs), timeMs };
}

const fileKeyTimes = new Map<string, number>();

/**
 * Publishes the batch into the `file://` store at `dir` (location `file://<dir>/`): the files
 * copied to their keys, then ONE metadata.json write (a rename, as the store's writer makes it).
 */
export async function publishBatchToDir(dir: string, items: readonly BatchItem[]): Promise<number> {
  const location = `file://${dir}/`;
  await mkdir(dir, { recursive: true });
  let document: unknown;
  try {
    document = await readFile(join(dir, 'metadata.json'), 'utf8');
  } catch {
    document = undefined;
  }
  for (const item of items) {
    const { bytes, schema, checksum } = await describeItem(item);
    const { key, timeMs } = datedKey(fileKeyTimes, item);
    const path = join(dir, key);
    await mkdir(join(path, '..'), { recursive: true });
    await writeFile(path, bytes);
    document = appendSnapshot(document, {
      location,
      dataset: item.dataset,
      engine: item.engine,
      schema,
      uri: `${location}${key}`,
      checksum,
      size: bytes.byteLength,
      timestampMs: timeMs,
    });
  }
  if (document === undefined) return Date.now();
  await writeFile(join(dir, 'metadata.json.next'), JSON.stringify(document));
  await rename(join(dir, 'metadata.json.next'), join(dir, 'metadata.json'));
  return Date.now();
}
