/**
 * SQLite declared column types and the Arrow types of the snapshot-store type table. SQLite does
 * not enforce declared types, so both directions go through the column's affinity (the rules of
 * https://sqlite.org/datatype3.html §3.1), with a few declared names of NUMERIC affinity read for
 * what they say (BOOLEAN, DECIMAL(p,s), DATE, DATETIME/TIMESTAMP). Anything else is reported by
 * name, never guessed.
 */
import type { ArrowDataType } from '@ferry/core/base';
import { arrowTypeName, canonicalArrowType } from './arrow-types.js';

export type SqliteAffinity = 'INTEGER' | 'TEXT' | 'BLOB' | 'REAL' | 'NUMERIC';

export function sqliteAffinity(declaredType: string): SqliteAffinity {
  const type = declaredType.toUpperCase();
  if (type.includes('INT')) return 'INTEGER';
  if (type.includes('CHAR') || type.includes('CLOB') || type.includes('TEXT')) return 'TEXT';
  if (type.includes('BLOB') || type.trim() === '') return 'BLOB';
  if (type.includes('REAL') || type.includes('FLOA') || type.includes('DOUB')) return 'REAL';
  return 'NUMERIC';
}

/**
 * The Arrow type `schema()` reports for a declared type: INTEGER → Int64, REAL → Float64,
 * TEXT → Utf8, BLOB → Binary; of NUMERIC affinity only BOOLEAN → Boolean, DECIMAL/NUMERIC(p,s)
 * → Decimal128, DATE → Date32, DATETIME/TIMESTAMP → Timestamp(µs). `undefined` otherwise
 * (including a column with no declared type).
 */
export function sqliteDeclaredTypeToArrow(declaredType: string): ArrowDataType | undefined {
  if (declaredType.trim() === '') return undefined;
  switch (sqliteAffinity(declaredType)) {
    case 'INTEGER':
      return 'Int64';
    case 'REAL':
      return 'Float64';
    case 'TEXT':
      return 'Utf8';
    case 'BLOB':
      return 'Binary';
    case 'NUMERIC': {
      if (/^\s*BOOL(EAN)?\s*$/i.test(declaredType)) return 'Boolean';
      const decimal = /^\s*(?:DECIMAL|NUMERIC)\s*\(\s*(\d+)\s*,\s*(\d+)\s*\)\s*$/i.exec(declaredType);
      if (decimal !== null) {
        const precision = Number(decimal[1]);
        const scale = Number(decimal[2]);
        return precision >= 1 && precision <= 38 && scale <= precision
          ? { Decimal128: [precision, scale] }
          : undefined;
      }
      if (/^\s*DATE\s*$/i.test(declaredType)) return 'Date32';
      if (/^\s*(DATETIME|TIMESTAMP)\s*$/i.test(declaredType)) return { Timestamp: ['Microsecond', null] };
      return undefined;
    }
  }
}

/** The affinities a column may have to store each family of the type table. */
const storableAffinities: Readonly<Record<string, readonly SqliteAffinity[]>> = {
  Boolean: ['INTEGER'],
  Int8: ['INTEGER'],
  Int16: ['INTEGER'],
  Int32: ['INTEGER'],
  Int64: ['INTEGER'],
  UInt8: ['INTEGER'],
  UInt16: ['INTEGER'],
  UInt32: ['INTEGER'],
  UInt64: ['INTEGER'],
  Float32: ['REAL'],
  Float64: ['REAL'],
  Decimal128: ['TEXT', 'NUMERIC'],
  Utf8: ['TEXT'],
  Binary: ['BLOB'],
  Date32: ['TEXT', 'INTEGER'],
  Time64: ['TEXT'],
  Timestamp: ['TEXT', 'INTEGER'],
  Interval: ['TEXT'],
  List: ['TEXT'],
  Struct: ['TEXT'],
  Map: ['TEXT'],
};

/**
 * Whether a column of this declared type can store values of the recorded Arrow type (the
 * after-download rule): by affinity, or when the declared name itself says the type's family
 * (BOOLEAN for Boolean, DATE for Date32, TIMESTAMP for any Timestamp), so every type `schema()`
 * reports passes. Throws `UnmappedArrowTypeError` for a type outside the table.
 */
export function sqliteStores(declaredType: string, recorded: ArrowDataType): boolean {
  const family = arrowTypeName(canonicalArrowType(recorded));
  const declared = sqliteDeclaredTypeToArrow(declaredType);
  if (declared !== undefined && arrowTypeName(declared) === family) return true;
  return (storableAffinities[family] ?? []).includes(sqliteAffinity(declaredType));
}
