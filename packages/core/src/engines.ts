/**
 * Engine names and the file formats behind them: the one definition every package uses. A dataset
 * names an acceleration engine (`duckdb`, `sqlite`, `turso`); a snapshot file has the format of
 * the engine that wrote it, and Turso writes SQLite-format files, so two formats cover three
 * engines. Spice compares engine names case-insensitively; so does {@link sameEngine}.
 */

/** The snapshot-capable file engines this runtime reads (Spice also has Cayenne, not supported here). */
export const ENGINE_NAMES = ['duckdb', 'sqlite', 'turso'] as const;

export type EngineName = (typeof ENGINE_NAMES)[number];

/** The database file formats: what an engine opens, a writer builds and a SQL dialect follows. */
export type FileFormat = 'duckdb' | 'sqlite';

/** How messages name a file format: `a DuckDB file`, `not a valid SQLite file`. */
export const FILE_FORMAT_NAMES: Readonly<Record<FileFormat, string>> = { duckdb: 'DuckDB', sqlite: 'SQLite' };

/** The format of the files `engine` reads and writes (Turso files are SQLite files). */
export function fileFormatOf(engine: EngineName): FileFormat {
  return engine === 'duckdb' ? 'duckdb' : 'sqlite';
}

/** Whether two engine names (as written in metadata.json or a spicepod) name the same engine. */
export function sameEngine(a: string, b: string): boolean {
  return a.toLowerCase() === b.toLowerCase();
}
