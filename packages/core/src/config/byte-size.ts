/**
 * Sizes as people write them for DuckDB (`512MB`, `2GiB`, `1.5 GB`, or a plain number of bytes):
 * decimal units KB / MB / GB / TB and binary ones KiB / MiB / GiB / TiB, case-insensitive. Used by
 * `duckdb_memory_limit` and the runtime's size options.
 */

const UNITS: Readonly<Record<string, number>> = {
  b: 1,
  kb: 1e3,
  mb: 1e6,
  gb: 1e9,
  tb: 1e12,
  kib: 2 ** 10,
  mib: 2 ** 20,
  gib: 2 ** 30,
  tib: 2 ** 40,
};

/** The size in bytes, or undefined when `text` is not one. */
export function parseByteSize(text: string | number): number | undefined {
  if (typeof text === 'number') return Number.isSafeInteger(text) && text >= 0 ? text : undefined;
  const match = /^\s*(\d+(?:\.\d+)?)\s*([a-z]*)\s*$/i.exec(text);
  if (match === null) return undefined;
  const unit = UNITS[(match[2] ?? '').toLowerCase() || 'b'];
  if (unit === undefined) return undefined;
  const bytes = Math.floor(Number(match[1]) * unit);
  return Number.isSafeInteger(bytes) ? bytes : undefined;
}
