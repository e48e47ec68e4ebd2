/**
 * The Flight SQL metadata commands a BI tool browses with: catalogs, schemas, tables (with their
 * Arrow schemas), table types, SQL info, and the (empty) key lists. Every answer has the exact
 * schema FlightSql.proto gives for it. Ferry's datasets are the tables of the runtime's one SQL
 * namespace, listed in schema `main` with no catalog: `main.<dataset>` resolves for every dataset
 * (an SQLite one named so runs in DuckDB), so a BI tool's qualified names run.
 */
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { type ArrowValue, columnBuilder } from '@ferry/engines/namespaces';
import {
  Binary,
  Bool,
  Data,
  type DataType,
  DenseUnion,
  Field,
  Int32,
  Int64,
  List,
  Map_,
  makeData,
  RecordBatch,
  Schema,
  Struct,
  Uint8,
  Uint32,
  Utf8,
} from 'apache-arrow';
import { schemaBytes } from './ipc.js';
import { sqlEnumValue } from './protocol.js';

export const SCHEMA_NAME = 'main';
export const TABLE_TYPE = 'TABLE';

const require = createRequire(import.meta.url);
const versionOf = (packageJson: string): string =>
  (JSON.parse(readFileSync(packageJson, 'utf8')) as { version: string }).version;
const VERSIONS = {
  ferry: versionOf(fileURLToPath(new URL('../package.json', import.meta.url))),
  // apache-arrow's exports hide its package.json: read it beside its entry point.
  arrow: versionOf(join(dirname(require.resolve('apache-arrow')), 'package.json')),
};

/** A metadata answer: its schema and its (one) batch. */
export interface MetadataResult {
  readonly schema: Schema;
  readonly batch: RecordBatch;
}

/** One column of a metadata result, built by the engines' Arrow column builder. */
function buildColumn(type: DataType, values: readonly ArrowValue[]): Data {
  const builder = columnBuilder(type);
  for (const value of values) builder.append(value);
  return builder.finish();
}

const utf8 = (name: string, nullable: boolean) => new Field(name, new Utf8(), nullable);

function result(fields: readonly Field[], rows: readonly (readonly ArrowValue[])[]): MetadataResult {
  const schema = new Schema([...fields]);
  const children = fields.map((field, index) =>
    buildColumn(
      field.type,
      rows.map((row) => row[index] ?? null),
    ),
  );
  const data = makeData({ type: new Struct(schema.fields), length: rows.length, nullCount: 0, children });
  return { schema, batch: new RecordBatch(schema, data) };
}

/** SQL `LIKE` as Flight SQL filter patterns use it: `%` any run, `_` one character, `\` escapes. */
export function likePattern(pattern: string | undefined): (value: string) => boolean {
  if (pattern === undefined) return () => true;
  let source = '';
  for (let i = 0; i < pattern.length; i++) {
    const c = pattern[i] as string;
    if (c === '\\' && i + 1 < pattern.length)
      source += (pattern[++i] as string).replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
    else if (c === '%') source += '.*';
    else if (c === '_') source += '.';
    else source += c.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  }
  const regex = new RegExp(`^${source}$`, 's');
  return (value) => regex.test(value);
}

/** Whether a `catalog` filter matches Ferry's tables (which have none): omitted or empty. */
const noCatalog = (catalog: string | undefined): boolean => catalog === undefined || catalog === '';

export function catalogs(): MetadataResult {
  return result([utf8('catalog_name', false)], []);
}

export function dbSchemas(catalog: string | undefined, schemaPattern: string | undefined): MetadataResult {
  const rows = noCatalog(catalog) && likePattern(schemaPattern)(SCHEMA_NAME) ? [[null, SCHEMA_NAME]] : [];
  return result([utf8('catalog_name', true), utf8('db_schema_name', false)], rows);
}

export function tableTypes(): MetadataResult {
  return result([utf8('table_type', false)], [[TABLE_TYPE]]);
}

export interface TablesRequest {
  readonly catalog?: string | undefined;
  readonly dbSchemaFilterPattern?: string | undefined;
  readonly tableNameFilterPattern?: string | undefined;
  readonly tableTypes: readonly string[];
  readonly includeSchema: boolean;
}

/** The dataset names a GetTables request selects, in the order the answer lists them. */
export function selectTables(request: TablesRequest, datasets: readonly string[]): string[] {
  if (!noCatalog(request.catalog) || !likePattern(request.dbSchemaFilterPattern)(SCHEMA_NAME)) return [];
  if (request.tableTypes.length > 0 && !request.tableTypes.includes(TABLE_TYPE)) return [];
  const matches = likePattern(request.tableNameFilterPattern);
  return datasets.filter(matches).sort();
}

/** The GetTables answer; `schemas` holds each selected table's columns when the request includes them. */
export function tables(
  request: TablesRequest,
  names: readonly string[],
  schemas: ReadonlyMap<string, Schema>,
): MetadataResult {
  const fields = [
    utf8('catalog_name', true),
    utf8('db_schema_name', true),
    utf8('table_name', false),
    utf8('table_type', false),
    ...(request.includeSchema ? [new Field('table_schema', new Binary(), false)] : []),
  ];
  const rows = names.map((name) => {
    const row: ArrowValue[] = [null, SCHEMA_NAME, name, TABLE_TYPE];
    if (request.includeSchema) {
      const columns = (schemas.get(name)?.fields ?? []).map(
        (field) =>
          new Field(
            field.name,
            field.type,
            field.nullable,
            new Map([
              ...field.metadata,
              ['ARROW:FLIGHT:SQL:DB_SCHEMA_NAME', SCHEMA_NAME],
              ['ARROW:FLIGHT:SQL:TABLE_NAME', name],
            ]),
          ),
      );
      row.push(schemaBytes(new Schema(columns)));
    }
    return row;
  });
  return result(fields, rows);
}

const KEY_COLUMNS = [
  'catalog_name',
  'db_schema_name',
  'table_name',
  'column_name',
  'key_name',
  'key_sequence',
];
const CROSS_COLUMNS = [
  'pk_catalog_name',
  'pk_db_schema_name',
  'pk_table_name',
  'pk_column_name',
  'fk_catalog_name',
  'fk_db_schema_name',
  'fk_table_name',
  'fk_column_name',
  'key_sequence',
  'fk_key_name',
  'pk_key_name',
  'update_rule',
  'delete_rule',
];

function keyField(name: string): Field {
  if (name === 'key_sequence') return new Field(name, new Int32(), false);
  if (name.endsWith('_rule')) return new Field(name, new Uint8(), false);
  const required = /(table|column)_name$/.test(name);
  return utf8(name, !required);
}

/** GetPrimaryKeys: snapshot tables declare none (an empty answer with the spec's schema). */
export function primaryKeys(): MetadataResult {
  return result(KEY_COLUMNS.map(keyField), []);
}

/** GetImportedKeys / GetExportedKeys / GetCrossReference: snapshot tables declare no foreign keys. */
export function foreignKeys(): MetadataResult {
  return result(CROSS_COLUMNS.map(keyField), []);
}

type InfoValue = string | boolean | { readonly int32: number };

function sqlInfoValues(): ReadonlyMap<number, InfoValue> {
  const id = (name: string) => sqlEnumValue('SqlInfo', name);
  const caseInsensitive = {
    int32: sqlEnumValue('SqlSupportedCaseSensitivity', 'SQL_CASE_SENSITIVITY_CASE_INSENSITIVE'),
  };
  return new Map<number, InfoValue>([
    [id('FLIGHT_SQL_SERVER_NAME'), 'Ferry'],
    [id('FLIGHT_SQL_SERVER_VERSION'), VERSIONS.ferry],
    [id('FLIGHT_SQL_SERVER_ARROW_VERSION'), VERSIONS.arrow],
    [id('FLIGHT_SQL_SERVER_READ_ONLY'), true],
    [id('FLIGHT_SQL_SERVER_SQL'), true],
    [id('FLIGHT_SQL_SERVER_SUBSTRAIT'), false],
    [
      id('FLIGHT_SQL_SERVER_TRANSACTION'),
      { int32: sqlEnumValue('SqlSupportedTransaction', 'SQL_SUPPORTED_TRANSACTION_NONE') },
    ],
    [id('FLIGHT_SQL_SERVER_CANCEL'), false],
    [id('FLIGHT_SQL_SERVER_BULK_INGESTION'), false],
    [id('SQL_DDL_CATALOG'), false],
    [id('SQL_DDL_SCHEMA'), false],
    [id('SQL_DDL_TABLE'), false],
    [id('SQL_IDENTIFIER_CASE'), caseInsensitive],
    [id('SQL_IDENTIFIER_QUOTE_CHAR'), '"'],
    [id('SQL_QUOTED_IDENTIFIER_CASE'), caseInsensitive],
    [id('SQL_ALL_TABLES_ARE_SELECTABLE'), true],
    [id('SQL_SEARCH_STRING_ESCAPE'), '\\'],
    [id('SQL_SCHEMA_TERM'), 'schema'],
    [id('SQL_SUPPORTS_COLUMN_ALIASING'), true],
    [id('SQL_STORED_PROCEDURES_SUPPORTED'), false],
    [id('SQL_SELECT_FOR_UPDATE_SUPPORTED'), false],
  ]);
}

/** The `value` union of GetSqlInfo, members in the order (and type ids) FlightSql.proto gives. */
function sqlInfoUnion(): DenseUnion {
  const int32List = new List(new Field('$data$', new Int32(), true));
  const entries = new Struct([new Field('key', new Int32(), false), new Field('value', int32List, true)]);
  return new DenseUnion(
    [0, 1, 2, 3, 4, 5],
    [
      new Field('string_value', new Utf8(), true),
      new Field('bool_value', new Bool(), true),
      new Field('bigint_value', new Int64(), true),
      new Field('int32_bitmask', new Int32(), true),
      new Field('string_list', new List(new Field('string_data', new Utf8(), true)), true),
      new Field('int32_to_int32_list_map', new Map_(new Field('entries', entries, false)), true),
    ],
  );
}

/** GetSqlInfo: what this server is (read-only, SQL, no transactions); `info` selects ids (empty: all). */
export function sqlInfo(info: readonly number[]): MetadataResult {
  const union = sqlInfoUnion();
  const values = [...sqlInfoValues()]
    .filter(([id]) => info.length === 0 || info.includes(id))
    .sort(([a], [b]) => a - b);
  const members: ArrowValue[][] = [[], [], [], [], [], []];
  const typeIds = new Int8Array(values.length);
  const offsets = new Int32Array(values.length);
  values.forEach(([, value], row) => {
    const member = typeof value === 'string' ? 0 : typeof value === 'boolean' ? 1 : 3;
    const list = members[member] as ArrowValue[];
    typeIds[row] = member;
    offsets[row] = list.length;
    list.push(typeof value === 'object' ? value.int32 : value);
  });
  const children = union.children.map((field, index) =>
    buildColumn(field.type, members[index] as ArrowValue[]),
  );
  const valueData = new Data(union, 0, values.length, 0, { 0: offsets, 3: typeIds } as never, children);
  const nameData = buildColumn(
    new Uint32(),
    values.map(([id]) => id),
  );
  const schema = new Schema([new Field('info_name', new Uint32(), false), new Field('value', union, false)]);
  const data = makeData({
    type: new Struct(schema.fields),
    length: values.length,
    nullCount: 0,
    children: [nameData, valueData],
  });
  return { schema, batch: new RecordBatch(schema, data) };
}
