/**
 * The dated key a snapshot object is uploaded to, exactly as the snapshot-store spec lays it out:
 * `month=YYYY-MM/day=YYYY-MM-DD/dataset=<name>/<name>_<YYYYMMDDTHHMMSSZ>.<ext>`, in UTC at second
 * resolution. Pure functions, so tests and tools can compute the key a publish will use.
 */
import type { FileFormat } from '@ferry/core/base';

const pad = (value: number, width = 2): string => String(value).padStart(width, '0');

/** `20261129T080000Z` for 2026-11-29 08:00:00.xyz UTC. */
export function snapshotTimestamp(timeMs: number): string {
  const d = new Date(timeMs);
  return (
    `${pad(d.getUTCFullYear(), 4)}${pad(d.getUTCMonth() + 1)}${pad(d.getUTCDate())}` +
    `T${pad(d.getUTCHours())}${pad(d.getUTCMinutes())}${pad(d.getUTCSeconds())}Z`
  );
}

/** The key, relative to the location, of `dataset`'s snapshot taken at `timeMs`. */
export function snapshotKey(dataset: string, engine: FileFormat, timeMs: number): string {
  const d = new Date(timeMs);
  const month = `${pad(d.getUTCFullYear(), 4)}-${pad(d.getUTCMonth() + 1)}`;
  const day = `${month}-${pad(d.getUTCDate())}`;
  return `month=${month}/day=${day}/dataset=${dataset}/${dataset}_${snapshotTimestamp(timeMs)}.${engine}`;
}
