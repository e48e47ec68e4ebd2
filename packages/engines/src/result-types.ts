/**
 * The Arrow type of a query result column, from the type name an engine reports in
 * `QueryResult.columns` (a result crosses threads as plain JSON, so only the name travels). A
 * DuckDB name is read back into the node-api type it was written from (the inverse of the types'
 * `toString()`: `BIGINT`, `DECIMAL(18,2)`, `INTEGER[]`, `STRUCT("a" INTEGER)`, `MAP(VARCHAR,
 * INTEGER)`, `TIMESTAMP WITH TIME ZONE`) and mapped by {@link duckDbTypeToArrow}; an SQLite name
 * (a declared type, or an expression's storage class) by {@link sqliteDeclaredTypeToArrow}. So
 * there is one mapping per engine, the one `schema()` uses. `undefined` for anything outside the
 * type table (HUGEINT, UUID, ENUM, UNION, fixed-size ARRAY, …).
 */
import type * as DuckDbApi from '@duckdb/node-api';
import type { ArrowDataType, FileFormat } from '@ferry/core/base';
import { duckdb } from './duckdb-node.js';
import { duckDbTypeToArrow } from './duckdb-types.js';
import { sqliteDeclaredTypeToArrow } from './sqlite-types.js';

type DuckDBType = DuckDbApi.DuckDBType;

const isDuckDbType = (value: unknown): value is DuckDBType =>
  typeof value === 'object' &&
  value !== null &&
  typeof (value as { typeId?: unknown }).typeId === 'number' &&
  typeof (value as { toLogicalType?: unknown }).toLogicalType === 'function';

/** node-api's parameterless types by the name they print, longest first (`TIMESTAMP_MS` before `TIMESTAMP`). */
const SCALARS: readonly (readonly [string, DuckDBType])[] = Object.values(
  duckdb as Readonly<Record<string, unknown>>,
)
  .filter(isDuckDbType)
  .map((type) => [type.toString(), type] as const)
  .sort(([a], [b]) => b.length - a.length);

class NameReader {
  #at = 0;
  constructor(readonly text: string) {}

  get done(): boolean {
    return this.#at >= this.text.length;
  }

  eat(token: string): boolean {
    if (!this.text.startsWith(token, this.#at)) return false;
    this.#at += token.length;
    return true;
  }

  expect(token: string): void {
    if (!this.eat(token)) throw new SyntaxError(`expected '${token}' at ${this.#at} of ${this.text}`);
  }

  integer(): number {
    const match = /^\d+/.exec(this.text.slice(this.#at));
    if (match === null) throw new SyntaxError(`expected a number at ${this.#at} of ${this.text}`);
    this.#at += match[0].length;
    return Number(match[0]);
  }

  /** A `"quoted"` identifier (`""` escapes a quote), as node-api writes struct entry names. */
  quoted(): string {
    this.expect('"');
    let name = '';
    while (!this.done) {
      if (this.eat('""')) name += '"';
      else if (this.eat('"')) return name;
      else name += this.text[this.#at++];
    }
    throw new SyntaxError(`unterminated identifier in ${this.text}`);
  }

  scalar(): DuckDBType | undefined {
    for (const [name, type] of SCALARS) {
      const end = this.#at + name.length;
      if (this.text.startsWith(name, this.#at) && !/[\w ]/.test(this.text[end] ?? '')) {
        this.#at = end;
        return type;
      }
    }
    return undefined;
  }
}

/** `type := base ('[]')*`; `undefined` for a type this reader (or the type table) does not know. */
function readType(reader: NameReader): DuckDBType | undefined {
  let type: DuckDBType | undefined;
  if (reader.eat('DECIMAL(')) {
    const width = reader.integer();
    reader.expect(',');
    const scale = reader.integer();
    reader.expect(')');
    type = duckdb.DECIMAL(width, scale);
  } else if (reader.eat('STRUCT(')) {
    const entries: Record<string, DuckDBType> = {};
    do {
      const name = reader.quoted();
      reader.expect(' ');
      const entry = readType(reader);
      if (entry === undefined) return undefined;
      entries[name] = entry;
    } while (reader.eat(', '));
    reader.expect(')');
    type = duckdb.STRUCT(entries);
  } else if (reader.eat('MAP(')) {
    const key = readType(reader);
    reader.expect(', ');
    const value = readType(reader);
    reader.expect(')');
    if (key === undefined || value === undefined) return undefined;
    type = duckdb.MAP(key, value);
  } else {
    type = reader.scalar();
  }
  if (type === undefined) return undefined;
  while (reader.eat('[]')) type = duckdb.LIST(type);
  // `T[3]` (a fixed-size ARRAY) is outside the type table.
  return reader.eat('[') ? undefined : type;
}

/** The node-api type a DuckDB type name was printed from, or `undefined` when it is not one this reads. */
export function duckDbTypeFromName(name: string): DuckDBType | undefined {
  const reader = new NameReader(name);
  try {
    const type = readType(reader);
    return reader.done ? type : undefined;
  } catch (error) {
    if (error instanceof SyntaxError) return undefined;
    throw error;
  }
}

/**
 * The Arrow type of a result column of `engine` whose type name is `typeName` (SQLite's `NULL`,
 * an expression that was null in every row, is Arrow's `Null`).
 */
export function resultColumnArrowType(engine: FileFormat, typeName: string): ArrowDataType | undefined {
  if (engine === 'sqlite') return typeName === 'NULL' ? 'Null' : sqliteDeclaredTypeToArrow(typeName);
  const type = duckDbTypeFromName(typeName);
  return type === undefined ? undefined : duckDbTypeToArrow(type);
}
