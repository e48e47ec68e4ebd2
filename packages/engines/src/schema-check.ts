/**
 * The after-download schema check of the snapshot-store spec: the downloaded file's real table
 * against the candidate's recorded Arrow schema. Field names and order must match exactly; each
 * type must be one the engine column can store (the spec's mapping table), nullability ignored.
 * DuckDB columns compare by canonical Arrow form (so `LargeUtf8` fits VARCHAR, any time zone fits
 * TIMESTAMPTZ); SQLite columns by affinity (INTEGER stores Int64, Boolean, Date32, …).
 */
import {
  type ArrowSchema,
  formatDataType,
  SnapshotRejectedError,
  SnapshotRejectionCode,
} from '@ferry/core/base';
import { canonicalArrowType, UnmappedArrowTypeError } from './arrow-types.js';
import { missingTable, type SnapshotEngine, type TableColumn } from './engine.js';
import { sqliteStores } from './sqlite-types.js';

/** What the check reads of an engine: its kind, the file's path and a table's columns. */
export type SchemaSource = Pick<SnapshotEngine, 'kind' | 'path' | 'columns'>;

function stores(engine: SchemaSource, column: TableColumn, recorded: ArrowSchema['fields'][number]): boolean {
  if (engine.kind === 'sqlite') return sqliteStores(column.type, recorded.data_type);
  return (
    column.arrow !== undefined &&
    formatDataType(canonicalArrowType(column.arrow)) ===
      formatDataType(canonicalArrowType(recorded.data_type))
  );
}

/**
 * Throws `ERR_SNAPSHOT_MISSING_TABLE` when `table` is absent and `ERR_SNAPSHOT_SCHEMA_MISMATCH`
 * naming the table, field and both types at the first difference. (`ERR_SNAPSHOT_NOT_A_DATABASE`
 * comes earlier, from opening the file.)
 */
export async function checkTableSchema(
  engine: SchemaSource,
  table: string,
  recorded: ArrowSchema,
): Promise<void> {
  const columns = await engine.columns(table);
  if (columns === undefined) throw missingTable(engine.path, table);
  const mismatch = (detail: string): SnapshotRejectedError =>
    new SnapshotRejectedError(
      SnapshotRejectionCode.schemaMismatch,
      `Table '${table}' in '${engine.path}' does not match the recorded schema: ${detail}; publish a snapshot whose table matches the schema recorded in metadata.json.`,
    );
  const count = Math.max(columns.length, recorded.fields.length);
  for (let index = 0; index < count; index++) {
    const column = columns[index];
    const field = recorded.fields[index];
    if (field === undefined) {
      throw mismatch(`column ${index} '${column?.name}' (${column?.type}) is not in the recorded schema`);
    }
    if (column === undefined) {
      throw mismatch(
        `recorded field ${index} '${field.name}' (${formatDataType(field.data_type)}) is missing from the table`,
      );
    }
    if (column.name !== field.name) {
      throw mismatch(`column ${index} is '${column.name}' where the recorded field is '${field.name}'`);
    }
    let storable: boolean;
    try {
      storable = stores(engine, column, field);
    } catch (error) {
      if (!(error instanceof UnmappedArrowTypeError)) throw error;
      throw mismatch(
        `field '${field.name}' is recorded as ${formatDataType(field.data_type)}, and ${error.typeName} is not in the snapshot-store type table (the ${engine.kind} column is ${column.type})`,
      );
    }
    if (!storable) {
      throw mismatch(
        `field '${field.name}' is ${column.type} in the file, which cannot store the recorded type ${formatDataType(field.data_type)}`,
      );
    }
  }
}
