/**
 * The Flight SQL metadata commands a BI tool browses with: catalogs, schemas, tables (with their
 * Arrow schemas), table types, SQL info, the SQL types (XDBC type info), and the (empty) key
 * lists. Every answer has the exact schema FlightSql.proto gives for it. As in Spice, every dataset and view is listed once, under
 * catalog `spice` and schema `public` (datasets as `TABLE`, the spicepod's views as `VIEW`), and
 * the runtime's own tables under `spice.runtime`; `spice.public.<name>` (and `public.<name>`,
 * `<name>`) resolves on both engines, so the names a BI tool writes from this listing run.
 */
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { type ArrowValue, columnBuilder, recordBatchOf } from '@ferry/engines/namespaces';
import { SPICE_CATALOG, SPICE_SCHEMA } from '@ferry/engines/sql';
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
  type RecordBatch,
  Schema,
  Struct,
  Uint8,
  Uint32,
  Utf8,
} from 'apache-arrow';
import { schemaBytes } from './ipc.js';
import { sqlEnumValue } from './protocol.js';

export const CATALOG_NAME = SPICE_CATALOG;
export const SCHEMA_NAME = SPICE_SCHEMA;
export const TABLE_TYPE = 'TABLE' as const;
export const VIEW_TYPE = 'VIEW' as const;

/** One table of the listing: a dataset, a view, or a runtime table. */
export interface ListedTable {
  readonly schema: string;
  readonly name: string;
  readonly type: typeof TABLE_TYPE | typeof VIEW_TYPE;
}

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
  return { schema, batch: recordBatchOf(schema, rows.length, children) };
}

/**
 * SQL `LIKE` as Flight SQL filter patterns use it: `%` any run, `_` one character, `\` escapes.
 * Matched in time linear in the pattern times the value (one `%` to go back to, the last): a
 * client's pattern of many `%` made a backtracking regex run for minutes on the host thread.
 */
export function likePattern(pattern: string | undefined): (value: string) => boolean {
  if (pattern === undefined) return () => true;
  // Each step: a character to match, `_` (ONE) or `%` (ANY); characters as code units, as before.
  const ANY = -1;
  const ONE = -2;
  const steps: number[] = [];
  for (let i = 0; i < pattern.length; i++) {
    const c = pattern.charCodeAt(i);
    if (c === 92 && i + 1 < pattern.length) steps.push(pattern.charCodeAt(++i));
    else steps.push(c === 37 ? ANY : c === 95 ? ONE : c);
  }
  return (value) => {
    let p = 0;
    let v = 0;
    let star = -1;
    let resume = 0;
    while (v < value.length) {
      const step = steps[p];
      if (step === ONE || step === value.charCodeAt(v)) {
        p++;
        v++;
      } else if (step === ANY) {
        star = p++;
        resume = v;
      } else if (star !== -1) {
        p = star + 1;
        v = ++resume;
      } else {
        return false;
      }
    }
    while (steps[p] === ANY) p++;
    return p === steps.length;
  };
}

/** Strings in binary (code unit) order, as Flight SQL's answers are ordered (Spice's builders sort so). */
const binaryOrder = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);

/** Whether a `catalog` filter selects Spice's one catalog: omitted, or `spice`. */
const ourCatalog = (catalog: string | undefined): boolean =>
  catalog === undefined || catalog === CATALOG_NAME;

export function catalogs(): MetadataResult {
  return result([utf8('catalog_name', false)], [[CATALOG_NAME]]);
}

/** The schemas: `public`, and `runtime` when the runtime has tables of its own. */
export function dbSchemas(
  catalog: string | undefined,
  schemaPattern: string | undefined,
  schemas: readonly string[],
): MetadataResult {
  const matches = likePattern(schemaPattern);
  const rows = ourCatalog(catalog)
    ? [...schemas]
        .sort(binaryOrder)
        .filter((schema) => matches(schema))
        .map((schema) => [CATALOG_NAME, schema])
    : [];
  return result([utf8('catalog_name', true), utf8('db_schema_name', false)], rows);
}

export function tableTypes(): MetadataResult {
  return result([utf8('table_type', false)], [[TABLE_TYPE], [VIEW_TYPE]]);
}

export interface TablesRequest {
  readonly catalog?: string | undefined;
  readonly dbSchemaFilterPattern?: string | undefined;
  readonly tableNameFilterPattern?: string | undefined;
  readonly tableTypes: readonly string[];
  readonly includeSchema: boolean;
}

/** The tables a GetTables request selects, in the order the answer lists them (schema, then name). */
export function selectTables(request: TablesRequest, tables: readonly ListedTable[]): ListedTable[] {
  if (!ourCatalog(request.catalog)) return [];
  const schemaMatches = likePattern(request.dbSchemaFilterPattern);
  const nameMatches = likePattern(request.tableNameFilterPattern);
  return tables
    .filter(
      (table) =>
        schemaMatches(table.schema) &&
        nameMatches(table.name) &&
        (request.tableTypes.length === 0 || request.tableTypes.includes(table.type)),
    )
    .sort((a, b) => binaryOrder(a.schema, b.schema) || binaryOrder(a.name, b.name));
}

/** The name a query of the table uses: `spice.<schema>."<name>"`. */
export function qualifiedName(table: Pick<ListedTable, 'schema' | 'name'>): string {
  return `${CATALOG_NAME}.${table.schema}."${table.name.replaceAll('"', '""')}"`;
}

/** The GetTables answer; `schemas` holds each selected table's columns (by qualified name) when the request includes them. */
export function tables(
  request: TablesRequest,
  selected: readonly ListedTable[],
  schemas: ReadonlyMap<string, Schema>,
): MetadataResult {
  const fields = [
    utf8('catalog_name', true),
    utf8('db_schema_name', true),
    utf8('table_name', false),
    utf8('table_type', false),
    ...(request.includeSchema ? [new Field('table_schema', new Binary(), false)] : []),
  ];
  const rows = selected.map((table) => {
    const row: ArrowValue[] = [CATALOG_NAME, table.schema, table.name, table.type];
    if (request.includeSchema) {
      const columns = (schemas.get(qualifiedName(table))?.fields ?? []).map(
        (field) =>
          new Field(
            field.name,
            field.type,
            field.nullable,
            new Map([
              ...field.metadata,
              ['ARROW:FLIGHT:SQL:CATALOG_NAME', CATALOG_NAME],
              ['ARROW:FLIGHT:SQL:DB_SCHEMA_NAME', table.schema],
              ['ARROW:FLIGHT:SQL:TABLE_NAME', table.name],
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

/** One type of GetXdbcTypeInfo's answer (JDBC's `getTypeInfo`, ODBC's `SQLGetTypeInfo`). */
interface XdbcType {
  readonly name: string;
  /** `XdbcDataType` without its `XDBC_` prefix. */
  readonly type: string;
  readonly size: number | null;
  /** Literals written between these (`'2026-01-02'`, `X'0102'`). */
  readonly quoted?: readonly [string, string];
  readonly createParams?: readonly string[];
  readonly caseSensitive?: boolean;
  /** Numeric types: unsigned (false), scale range and radix (10 exact, 2 approximate). */
  readonly numeric?: { readonly scale: readonly [number, number] | null; readonly radix: number };
  /** A datetime type's `XdbcDatetimeSubcode` (its `sql_data_type` is then `XDBC_DATETIME`). */
  readonly subcode?: string;
}

/** The types Ferry's answers carry (its engines' type table), named as DuckDB names them. */
const XDBC_TYPES: readonly XdbcType[] = [
  { name: 'BOOLEAN', type: 'BIT', size: 1 },
  { name: 'TINYINT', type: 'TINYINT', size: 3, numeric: { scale: [0, 0], radix: 10 } },
  { name: 'SMALLINT', type: 'SMALLINT', size: 5, numeric: { scale: [0, 0], radix: 10 } },
  { name: 'INTEGER', type: 'INTEGER', size: 10, numeric: { scale: [0, 0], radix: 10 } },
  { name: 'BIGINT', type: 'BIGINT', size: 19, numeric: { scale: [0, 0], radix: 10 } },
  {
    name: 'DECIMAL',
    type: 'DECIMAL',
    size: 38,
    createParams: ['precision', 'scale'],
    numeric: { scale: [0, 38], radix: 10 },
  },
  { name: 'FLOAT', type: 'FLOAT', size: 24, numeric: { scale: null, radix: 2 } },
  { name: 'DOUBLE', type: 'DOUBLE', size: 53, numeric: { scale: null, radix: 2 } },
  { name: 'VARCHAR', type: 'VARCHAR', size: 2_147_483_647, quoted: ["'", "'"], caseSensitive: true },
  { name: 'BLOB', type: 'VARBINARY', size: 2_147_483_647, quoted: ["X'", "'"] },
  { name: 'DATE', type: 'DATE', size: 10, quoted: ["'", "'"], subcode: 'DATE' },
  { name: 'TIME', type: 'TIME', size: 15, quoted: ["'", "'"], subcode: 'TIME' },
  { name: 'TIMESTAMP', type: 'TIMESTAMP', size: 26, quoted: ["'", "'"], subcode: 'TIMESTAMP' },
];

const int32 = (name: string, nullable: boolean) => new Field(name, new Int32(), nullable);
const bool = (name: string, nullable: boolean) => new Field(name, new Bool(), nullable);

/**
 * GetXdbcTypeInfo: the SQL types of Ferry's answers, with the spec's schema, ordered by data type
 * then name; `dataType` (an `XdbcDataType` number) selects one. As in Spice, a JDBC or ODBC
 * driver's type listing works (Arrow's JDBC driver calls it for `DatabaseMetaData.getTypeInfo()`).
 */
export function xdbcTypeInfo(dataType: number | undefined): MetadataResult {
  const xdbc = (name: string) => sqlEnumValue('XdbcDataType', `XDBC_${name}`);
  const nullable = sqlEnumValue('Nullable', 'NULLABILITY_NULLABLE');
  const searchable = sqlEnumValue('Searchable', 'SEARCHABLE_FULL');
  const rows = XDBC_TYPES.map((type): ArrowValue[] => {
    const code = xdbc(type.type);
    const { numeric, subcode } = type;
    return [
      type.name,
      code,
      type.size,
      type.quoted?.[0] ?? null,
      type.quoted?.[1] ?? null,
      type.createParams === undefined ? null : [...type.createParams],
      nullable,
      type.caseSensitive === true,
      searchable,
      numeric === undefined ? null : false,
      false,
      numeric === undefined ? null : false,
      type.name,
      numeric?.scale?.[0] ?? null,
      numeric?.scale?.[1] ?? null,
      subcode === undefined ? code : xdbc('DATETIME'),
      subcode === undefined ? null : sqlEnumValue('XdbcDatetimeSubcode', `XDBC_SUBCODE_${subcode}`),
      numeric?.radix ?? null,
      null,
    ];
  })
    .filter((row) => dataType === undefined || row[1] === dataType)
    .sort((a, b) => (a[1] as number) - (b[1] as number) || binaryOrder(String(a[0]), String(b[0])));
  return result(
    [
      utf8('type_name', false),
      int32('data_type', false),
      int32('column_size', true),
      utf8('literal_prefix', true),
      utf8('literal_suffix', true),
      new Field('create_params', new List(new Field('item', new Utf8(), false)), true),
      int32('nullable', false),
      bool('case_sensitive', false),
      int32('searchable', false),
      bool('unsigned_attribute', true),
      bool('fixed_prec_scale', false),
      bool('auto_increment', true),
      utf8('local_type_name', true),
      int32('minimum_scale', true),
      int32('maximum_scale', true),
      int32('sql_data_type', false),
      int32('datetime_subcode', true),
      int32('num_prec_radix', true),
      int32('interval_precision', true),
    ],
    rows,
  );
}

/**
 * A GetSqlInfo value, by the union member it travels as: `string_value`, `bool_value`,
 * `bigint_value`, `int32_bitmask` (also an enum's ordinal), `int32_to_int32_list_map`.
 */
type InfoValue =
  | string
  | boolean
  | { readonly bigint: number }
  | { readonly int32: number }
  | { readonly map: readonly (readonly [number, readonly number[]])[] };

/** An `int32_bitmask` of `enumName`'s values `names` (bit `1 << value` each). */
function bitmask(enumName: string, names: readonly string[]): { readonly int32: number } {
  return { int32: names.reduce((mask, name) => mask | (1 << sqlEnumValue(enumName, name)), 0) };
}

/**
 * SQL_SUPPORTS_CONVERT: the `CAST`s both engines take between the SQL types JDBC asks about (a
 * number to a number or text, text to anything, a date or time to text and to its datetime kin).
 */
function supportsConvert(): InfoValue {
  const type = (name: string) => sqlEnumValue('SqlSupportsConvert', `SQL_CONVERT_${name}`);
  const numbers = ['BIGINT', 'BIT', 'DECIMAL', 'FLOAT', 'INTEGER', 'NUMERIC', 'REAL', 'SMALLINT', 'TINYINT'];
  const text = ['CHAR', 'LONGVARCHAR', 'VARCHAR'];
  const to: Record<string, readonly string[]> = {
    ...Object.fromEntries(numbers.map((from) => [from, [...numbers, ...text]])),
    ...Object.fromEntries(text.map((from) => [from, [...numbers, ...text, 'DATE', 'TIME', 'TIMESTAMP']])),
    DATE: ['DATE', 'TIMESTAMP', ...text],
    TIME: ['TIME', ...text],
    TIMESTAMP: ['DATE', 'TIME', 'TIMESTAMP', ...text],
  };
  return {
    map: Object.entries(to)
      .map(([from, targets]) => [type(from), targets.map(type).sort((a, b) => a - b)] as const)
      .sort(([a], [b]) => a - b),
  };
}

/**
 * What GetSqlInfo answers: every id Spice answers whose answer holds for Ferry, each as the union
 * member Arrow's JDBC driver reads it as (its DatabaseMetaData unboxes a missing Boolean, Integer or
 * Long, and drivers before arrow-java#994 fail with a NullPointerException: DBeaver's connect calls
 * several). Limits are 0 (none, or unknown, as JDBC reads it); SQL_DEFAULT_TRANSACTION_ISOLATION is
 * an int64, as Arrow's own SqlInfoBuilder, Spice and the JDBC driver have it. The null ordering and
 * the function lists differ between the engines and are not answered.
 */
function sqlInfoValues(): ReadonlyMap<number, InfoValue> {
  const id = (name: string) => sqlEnumValue('SqlInfo', name);
  const caseInsensitive = {
    int32: sqlEnumValue('SqlSupportedCaseSensitivity', 'SQL_CASE_SENSITIVITY_CASE_INSENSITIVE'),
  };
  const unlimited = { bigint: 0 };
  const limits = [
    'SQL_MAX_BINARY_LITERAL_LENGTH',
    'SQL_MAX_CHAR_LITERAL_LENGTH',
    'SQL_MAX_COLUMN_NAME_LENGTH',
    'SQL_MAX_COLUMNS_IN_GROUP_BY',
    'SQL_MAX_COLUMNS_IN_INDEX',
    'SQL_MAX_COLUMNS_IN_ORDER_BY',
    'SQL_MAX_COLUMNS_IN_SELECT',
    'SQL_MAX_COLUMNS_IN_TABLE',
    'SQL_MAX_CONNECTIONS',
    'SQL_MAX_CURSOR_NAME_LENGTH',
    'SQL_MAX_INDEX_LENGTH',
    'SQL_DB_SCHEMA_NAME_LENGTH',
    'SQL_MAX_PROCEDURE_NAME_LENGTH',
    'SQL_MAX_CATALOG_NAME_LENGTH',
    'SQL_MAX_ROW_SIZE',
    'SQL_MAX_STATEMENT_LENGTH',
    'SQL_MAX_STATEMENTS',
    'SQL_MAX_TABLE_NAME_LENGTH',
    'SQL_MAX_TABLES_IN_SELECT',
    'SQL_MAX_USERNAME_LENGTH',
  ];
  const readOnlyForwardOnly = bitmask('SqlSupportedResultSetConcurrency', [
    'SQL_RESULT_SET_CONCURRENCY_READ_ONLY',
  ]);
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
    [id('SQL_EXTRA_NAME_CHARACTERS'), ''],
    [id('SQL_SUPPORTS_COLUMN_ALIASING'), true],
    [id('SQL_NULL_PLUS_NULL_IS_NULL'), true],
    [id('SQL_SUPPORTS_CONVERT'), supportsConvert()],
    [id('SQL_SUPPORTS_TABLE_CORRELATION_NAMES'), true],
    [id('SQL_SUPPORTS_DIFFERENT_TABLE_CORRELATION_NAMES'), false],
    [id('SQL_SUPPORTS_EXPRESSIONS_IN_ORDER_BY'), true],
    [id('SQL_SUPPORTS_ORDER_BY_UNRELATED'), true],
    [
      id('SQL_SUPPORTED_GROUP_BY'),
      bitmask('SqlSupportedGroupBy', ['SQL_GROUP_BY_UNRELATED', 'SQL_GROUP_BY_BEYOND_SELECT']),
    ],
    [id('SQL_SUPPORTS_LIKE_ESCAPE_CLAUSE'), true],
    [id('SQL_SUPPORTS_NON_NULLABLE_COLUMNS'), true],
    [
      id('SQL_SUPPORTED_GRAMMAR'),
      bitmask('SupportedSqlGrammar', ['SQL_MINIMUM_GRAMMAR', 'SQL_CORE_GRAMMAR']),
    ],
    [id('SQL_ANSI92_SUPPORTED_LEVEL'), bitmask('SupportedAnsi92SqlGrammarLevel', ['ANSI92_ENTRY_SQL'])],
    [id('SQL_SUPPORTS_INTEGRITY_ENHANCEMENT_FACILITY'), false],
    [
      id('SQL_OUTER_JOINS_SUPPORT_LEVEL'),
      { int32: sqlEnumValue('SqlOuterJoinsSupportLevel', 'SQL_FULL_OUTER_JOINS') },
    ],
    [id('SQL_SCHEMA_TERM'), 'schema'],
    [id('SQL_PROCEDURE_TERM'), 'procedure'],
    [id('SQL_CATALOG_TERM'), 'catalog'],
    [id('SQL_CATALOG_AT_START'), true],
    [id('SQL_SCHEMAS_SUPPORTED_ACTIONS'), { int32: 0 }],
    [id('SQL_CATALOGS_SUPPORTED_ACTIONS'), { int32: 0 }],
    [id('SQL_SUPPORTED_POSITIONED_COMMANDS'), { int32: 0 }],
    [id('SQL_SELECT_FOR_UPDATE_SUPPORTED'), false],
    [id('SQL_STORED_PROCEDURES_SUPPORTED'), false],
    [
      id('SQL_SUPPORTED_SUBQUERIES'),
      bitmask('SqlSupportedSubqueries', [
        'SQL_SUBQUERIES_IN_COMPARISONS',
        'SQL_SUBQUERIES_IN_EXISTS',
        'SQL_SUBQUERIES_IN_INS',
      ]),
    ],
    [id('SQL_CORRELATED_SUBQUERIES_SUPPORTED'), true],
    [id('SQL_SUPPORTED_UNIONS'), bitmask('SqlSupportedUnions', ['SQL_UNION', 'SQL_UNION_ALL'])],
    ...limits.map((name): [number, InfoValue] => [id(name), unlimited]),
    [id('SQL_MAX_ROW_SIZE_INCLUDES_BLOBS'), true],
    [
      id('SQL_DEFAULT_TRANSACTION_ISOLATION'),
      { bigint: sqlEnumValue('SqlTransactionIsolationLevel', 'SQL_TRANSACTION_NONE') },
    ],
    [id('SQL_TRANSACTIONS_SUPPORTED'), false],
    [
      id('SQL_SUPPORTED_TRANSACTIONS_ISOLATION_LEVELS'),
      bitmask('SqlTransactionIsolationLevel', ['SQL_TRANSACTION_NONE']),
    ],
    [id('SQL_DATA_DEFINITION_CAUSES_TRANSACTION_COMMIT'), false],
    [id('SQL_DATA_DEFINITIONS_IN_TRANSACTIONS_IGNORED'), false],
    [
      id('SQL_SUPPORTED_RESULT_SET_TYPES'),
      bitmask('SqlSupportedResultSetType', ['SQL_RESULT_SET_TYPE_FORWARD_ONLY']),
    ],
    [id('SQL_SUPPORTED_CONCURRENCIES_FOR_RESULT_SET_UNSPECIFIED'), readOnlyForwardOnly],
    [id('SQL_SUPPORTED_CONCURRENCIES_FOR_RESULT_SET_FORWARD_ONLY'), readOnlyForwardOnly],
    [id('SQL_SUPPORTED_CONCURRENCIES_FOR_RESULT_SET_SCROLL_SENSITIVE'), { int32: 0 }],
    [id('SQL_SUPPORTED_CONCURRENCIES_FOR_RESULT_SET_SCROLL_INSENSITIVE'), { int32: 0 }],
    [id('SQL_BATCH_UPDATES_SUPPORTED'), false],
    [id('SQL_SAVEPOINTS_SUPPORTED'), false],
    [id('SQL_NAMED_PARAMETERS_SUPPORTED'), false],
    [id('SQL_LOCATORS_UPDATE_COPY'), false],
    [id('SQL_STORED_FUNCTIONS_USING_CALL_SYNTAX_SUPPORTED'), false],
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
    const [member, item]: [number, ArrowValue] =
      typeof value === 'string'
        ? [0, value]
        : typeof value === 'boolean'
          ? [1, value]
          : 'bigint' in value
            ? [2, BigInt(value.bigint)]
            : 'int32' in value
              ? [3, value.int32]
              : [5, value.map.map(([key, list]) => [key, [...list]])];
    const list = members[member] as ArrowValue[];
    typeIds[row] = member;
    offsets[row] = list.length;
    list.push(item);
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
  return { schema, batch: recordBatchOf(schema, values.length, [nameData, valueData]) };
}
