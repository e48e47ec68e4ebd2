/**
 * DuckDB column types to the Arrow JSON a Spice writer records, per the snapshot-store type table.
 * Works on the structured types DuckDB reports for a prepared `SELECT *` (so nested lists,
 * structs and maps need no type-string parsing). Anything outside the table (HUGEINT, UUID,
 * ENUM, UNION, ARRAY, TIME WITH TIME ZONE, …) maps to `undefined`: reported by name, never guessed.
 */
import type * as DuckDbApi from '@duckdb/node-api';
import type { ArrowDataType } from '@ferry/core/base';
import { arrowList, arrowMap, arrowStruct, TIMESTAMPTZ_ZONE } from './arrow-types.js';
import { duckdb } from './duckdb-node.js';

const { DuckDBTypeId } = duckdb;
type DuckDBTypeId = DuckDbApi.DuckDBTypeId;
type DuckDBType = DuckDbApi.DuckDBType;

const scalars: Partial<Record<DuckDBTypeId, ArrowDataType>> = {
  [DuckDBTypeId.BOOLEAN]: 'Boolean',
  [DuckDBTypeId.TINYINT]: 'Int8',
  [DuckDBTypeId.SMALLINT]: 'Int16',
  [DuckDBTypeId.INTEGER]: 'Int32',
  [DuckDBTypeId.BIGINT]: 'Int64',
  [DuckDBTypeId.UTINYINT]: 'UInt8',
  [DuckDBTypeId.USMALLINT]: 'UInt16',
  [DuckDBTypeId.UINTEGER]: 'UInt32',
  [DuckDBTypeId.UBIGINT]: 'UInt64',
  [DuckDBTypeId.FLOAT]: 'Float32',
  [DuckDBTypeId.DOUBLE]: 'Float64',
  [DuckDBTypeId.VARCHAR]: 'Utf8',
  [DuckDBTypeId.BLOB]: 'Binary',
  [DuckDBTypeId.DATE]: 'Date32',
  [DuckDBTypeId.TIME]: { Time64: 'Microsecond' },
  [DuckDBTypeId.TIMESTAMP_S]: { Timestamp: ['Second', null] },
  [DuckDBTypeId.TIMESTAMP_MS]: { Timestamp: ['Millisecond', null] },
  [DuckDBTypeId.TIMESTAMP]: { Timestamp: ['Microsecond', null] },
  [DuckDBTypeId.TIMESTAMP_NS]: { Timestamp: ['Nanosecond', null] },
  [DuckDBTypeId.TIMESTAMP_TZ]: { Timestamp: ['Microsecond', TIMESTAMPTZ_ZONE] },
  [DuckDBTypeId.INTERVAL]: { Interval: 'MonthDayNano' },
};

/** The Arrow form of a DuckDB type, or `undefined` when it (or a nested part) is outside the type table. */
export function duckDbTypeToArrow(type: DuckDBType): ArrowDataType | undefined {
  switch (type.typeId) {
    case DuckDBTypeId.DECIMAL:
      return type.width <= 38 ? { Decimal128: [type.width, type.scale] } : undefined;
    case DuckDBTypeId.LIST: {
      const item = duckDbTypeToArrow(type.valueType);
      return item === undefined ? undefined : arrowList(item);
    }
    case DuckDBTypeId.STRUCT: {
      const fields: (readonly [string, ArrowDataType])[] = [];
      for (const [index, name] of type.entryNames.entries()) {
        const entryType = type.entryTypes[index];
        const mapped = entryType === undefined ? undefined : duckDbTypeToArrow(entryType);
        if (mapped === undefined) return undefined;
        fields.push([name, mapped]);
      }
      return arrowStruct(fields);
    }
    case DuckDBTypeId.MAP: {
      const key = duckDbTypeToArrow(type.keyType);
      const value = duckDbTypeToArrow(type.valueType);
      return key === undefined || value === undefined ? undefined : arrowMap(key, value);
    }
    default:
      return scalars[type.typeId];
  }
}
