/**
 * Flight SQL against a real runtime (real fauxqs, real DuckDB and SQLite snapshots) behind an API
 * key, driven by clients nobody here wrote: a plain `@grpc/grpc-js` stub of Flight.proto with
 * FlightSql.proto messages and apache-arrow (browsing, prepared statements, refusals, errors),
 * and `@lancedb/arrow-flight-sql-client` (a Basic auth handshake, then a query with the token).
 */
import { status } from '@grpc/grpc-js';
import { Client as LanceClient } from '@lancedb/arrow-flight-sql-client';
import {
  type Field,
  Float64,
  Int64,
  type Schema,
  Table,
  Type,
  tableFromArrays,
  tableToIPC,
  type Union,
  UnionMode,
  Utf8,
  vectorFromArray,
} from 'apache-arrow';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { splitIpcStream, startFlightServer } from '../src/index.js';
import { decodeSqlMessage, encodeSql } from '../src/protocol.js';
import { statementHandle, ticketRequest } from '../src/requests.js';
import {
  bearer,
  call,
  collect,
  decodeSqlAny,
  type FlightInfoMessage,
  type FlightStub,
  fetchTable,
  flightStub,
  ORDERS_SQL,
  readSchema,
  type Served,
  serveDatasets,
  sqlCommand,
  tableOf,
  USERS_SQL,
} from './support.js';

const KEY = 'flight-test-key';
const WRITE_REFUSAL =
  "writes to accelerated table orders are not permitted when refresh_mode is 'snapshot'; the accelerator is driven exclusively from the snapshot store";

let served: Served;
let stub: FlightStub;
const auth = () => bearer(KEY);

beforeAll(async () => {
  served = await serveDatasets(
    [
      { name: 'orders', engine: 'duckdb', sql: ORDERS_SQL },
      { name: 'users', engine: 'sqlite', sql: USERS_SQL },
    ],
    {
      prefix: 'flight-sql/',
      unpublished: ['late'],
      flight: { apiKey: KEY },
      runtime: { maxStreamBytes: 64 * 1024 },
    },
  );
  stub = flightStub(served.flight.address);
});

afterAll(async () => {
  stub?.close();
  await served?.close();
});

const cmd = (name: string, fields: Record<string, unknown> = {}) => ({
  type: 'CMD' as const,
  cmd: sqlCommand(name, fields),
});

function typesOf(schema: Schema): Record<string, string> {
  return Object.fromEntries(schema.fields.map((field: Field) => [field.name, String(field.type)]));
}

async function failure(
  promise: Promise<unknown>,
): Promise<{ code: number; details: string; metadata: { get(key: string): unknown[] } }> {
  try {
    await promise;
  } catch (error) {
    return error as { code: number; details: string; metadata: { get(key: string): unknown[] } };
  }
  throw new Error('the call succeeded');
}

describe('browsing: catalogs, schemas, tables with their Arrow types', () => {
  it('GetTables with include_schema lists every dataset with its columns as typed Arrow fields', async () => {
    const table = await fetchTable(stub, cmd('CommandGetTables', { includeSchema: true }), auth());
    expect(table.schema.fields.map((field) => field.name)).toEqual([
      'catalog_name',
      'db_schema_name',
      'table_name',
      'table_type',
      'table_schema',
    ]);
    const rows = table.toArray().map((row) => row.toJSON());
    expect(rows.map((row) => [row.catalog_name, row.db_schema_name, row.table_name, row.table_type])).toEqual(
      [
        ['spice', 'public', 'late', 'TABLE'],
        ['spice', 'public', 'orders', 'TABLE'],
        ['spice', 'public', 'users', 'TABLE'],
        ['spice', 'runtime', 'task_history', 'TABLE'],
      ],
    );
    const schemas = new Map(
      rows.map((row) => [row.table_name as string, readSchema(row.table_schema as Uint8Array)]),
    );
    expect(typesOf(schemas.get('orders') as Schema)).toEqual({
      id: 'Int64',
      amount: 'Decimal[10e+2]',
      placed: 'Date32<DAY>',
      placed_at: 'Timestamp<MICROSECOND>',
      customer: 'Utf8',
      paid: 'Bool',
      ratio: 'Float64',
      payload: 'Binary',
      big: 'Int64',
      note: 'Utf8',
    });
    expect(typesOf(schemas.get('users') as Schema)).toEqual({
      id: 'Int64',
      name: 'Utf8',
      score: 'Float64',
      admin: 'Bool',
      joined: 'Date32<DAY>',
    });
    // A dataset still waiting for its first snapshot is listed, with no columns yet.
    expect((schemas.get('late') as Schema).fields).toEqual([]);
    const amount = (schemas.get('orders') as Schema).fields.find((field) => field.name === 'amount');
    expect(amount?.metadata.get('ARROW:FLIGHT:SQL:TYPE_NAME')).toBe('DECIMAL(10,2)');
    expect(amount?.metadata.get('ARROW:FLIGHT:SQL:TABLE_NAME')).toBe('orders');
    expect(amount?.metadata.get('ARROW:FLIGHT:SQL:DB_SCHEMA_NAME')).toBe('public');
    expect(amount?.metadata.get('ARROW:FLIGHT:SQL:CATALOG_NAME')).toBe('spice');
  });

  it('GetTables with include_schema fails with the cause when a schema cannot be read (not an empty schema)', async () => {
    const broken = await startFlightServer(served.runtime, {
      port: 0,
      apiKey: KEY,
      logger: served.logger,
      source: {
        stream: async () => {
          throw new Error('the engine broke down');
        },
      },
    });
    const brokenStub = flightStub(broken.address);
    try {
      const failed = await failure(
        fetchTable(brokenStub, cmd('CommandGetTables', { includeSchema: true }), auth()),
      );
      expect(failed.code).toBe(status.INTERNAL);
      expect(served.logger.records.some((record) => record.message.includes('the engine broke down'))).toBe(
        true,
      );
      // Without schemas nothing is read: the listing answers.
      const listed = await fetchTable(brokenStub, cmd('CommandGetTables', {}), auth());
      const healthy = await fetchTable(stub, cmd('CommandGetTables', {}), auth());
      expect(listed.numRows).toBeGreaterThan(0);
      expect(listed.toArray().map((row) => row.table_name)).toEqual(
        healthy.toArray().map((row) => row.table_name),
      );
    } finally {
      brokenStub.close();
      await broken.close();
    }
  });

  it('GetTables filters by table name pattern and table type, without schemas unless asked', async () => {
    const byName = await fetchTable(
      stub,
      cmd('CommandGetTables', { tableNameFilterPattern: 'ord%' }),
      auth(),
    );
    expect(byName.toArray().map((row) => row.table_name)).toEqual(['orders']);
    expect(byName.schema.fields.map((field) => field.name)).not.toContain('table_schema');
    const views = await fetchTable(stub, cmd('CommandGetTables', { tableTypes: ['VIEW'] }), auth());
    expect(views.numRows).toBe(0);
    const spice = await fetchTable(stub, cmd('CommandGetTables', { catalog: 'spice' }), auth());
    expect(spice.numRows).toBe(4);
    const otherCatalog = await fetchTable(stub, cmd('CommandGetTables', { catalog: 'main' }), auth());
    expect(otherCatalog.numRows).toBe(0);
    const otherSchema = await fetchTable(
      stub,
      cmd('CommandGetTables', { dbSchemaFilterPattern: 'main' }),
      auth(),
    );
    expect(otherSchema.numRows).toBe(0);
  });

  it('a GetTables pattern of many % answers at once (a regex of them backtracked for seconds on the host thread)', async () => {
    const started = performance.now();
    const listed = await fetchTable(
      stub,
      cmd('CommandGetTables', { tableNameFilterPattern: `${'%'.repeat(21)}X` }),
      auth(),
    );
    expect(listed.numRows).toBe(0);
    expect(performance.now() - started).toBeLessThan(1_000);
  });

  it('GetCatalogs, GetDbSchemas, GetTableTypes and GetSqlInfo answer with the spec schemas', async () => {
    const catalogs = await fetchTable(stub, cmd('CommandGetCatalogs'), auth());
    expect(catalogs.schema.fields.map((field) => `${field.name}:${field.type}:${field.nullable}`)).toEqual([
      'catalog_name:Utf8:false',
    ]);
    expect(catalogs.toArray().map((row) => row.catalog_name)).toEqual(['spice']);
    const schemas = await fetchTable(stub, cmd('CommandGetDbSchemas'), auth());
    expect(schemas.toArray().map((row) => row.toJSON())).toEqual([
      { catalog_name: 'spice', db_schema_name: 'public' },
      { catalog_name: 'spice', db_schema_name: 'runtime' },
    ]);
    const types = await fetchTable(stub, cmd('CommandGetTableTypes'), auth());
    expect(types.toArray().map((row) => row.table_type)).toEqual(['TABLE', 'VIEW']);
    const info = await fetchTable(stub, cmd('CommandGetSqlInfo', { info: [0, 3, 504] }), auth());
    expect(info.toArray().map((row) => [row.info_name, row.value])).toEqual([
      [0, 'Ferry'],
      [3, true],
      [504, '"'],
    ]);
    const value = info.schema.fields[1]?.type as Union;
    expect([value.typeId, value.mode]).toEqual([Type.Union, UnionMode.Dense]);
  });

  it("GetSqlInfo answers every id Arrow's JDBC driver reads, each as the union member it reads it as (before arrow-java#994 a missing one is a NullPointerException)", async () => {
    const info = await fetchTable(stub, cmd('CommandGetSqlInfo'), auth());
    const union = info.getChild('value');
    if (union === null) throw new Error('no value column');
    const members = new Map<number, string>();
    const values = new Map<number, unknown>();
    info.toArray().forEach((row, index) => {
      const typeId = union.data[0]?.typeIds[index] as number;
      members.set(row.info_name as number, (union.type as Union).children[typeId]?.name as string);
      values.set(row.info_name as number, row.value);
    });
    const range = (from: number, to: number) => Array.from({ length: to - from + 1 }, (_, i) => from + i);
    // ArrowDatabaseMetadata's getters: the Boolean, Integer, Long, Map and String it casts each to.
    const expected: Record<string, number[]> = {
      bool_value: [
        3, 515, 516, 518, 519, 520, 521, 523, 524, 527, 532, 536, 537, 539, 556, 563, 565, 566, 572, 573, 574,
        575, 576,
      ],
      int32_bitmask: [522, 525, 526, 528, 533, 534, 535, 538, 540, 564, 567],
      bigint_value: [...range(541, 555), ...range(557, 562)],
      string_value: [0, 1, 504, 513, 514, 529, 530, 531],
      int32_to_int32_list_map: [517],
    };
    for (const [member, ids] of Object.entries(expected)) {
      expect(Object.fromEntries(ids.map((id) => [id, members.get(id)]))).toEqual(
        Object.fromEntries(ids.map((id) => [id, member])),
      );
    }
    // No transactions (isolation TRANSACTION_NONE), a BIGINT casts to VARCHAR, limits unknown (0).
    expect([values.get(563), values.get(562), values.get(543)]).toEqual([false, 0n, 0n]);
    const convert = (values.get(517) as { toJSON(): Record<string, { toArray(): Int32Array }> }).toJSON();
    expect([...(convert['0']?.toArray() ?? [])]).toContain(19);
  });

  it('GetXdbcTypeInfo lists the SQL types of the answers with the spec schema, by data type then name, one on request', async () => {
    const all = await fetchTable(stub, cmd('CommandGetXdbcTypeInfo'), auth());
    expect(all.schema.fields.map((field) => `${field.name}:${field.type}:${field.nullable}`)).toEqual([
      'type_name:Utf8:false',
      'data_type:Int32:false',
      'column_size:Int32:true',
      'literal_prefix:Utf8:true',
      'literal_suffix:Utf8:true',
      'create_params:List<Utf8>:true',
      'nullable:Int32:false',
      'case_sensitive:Bool:false',
      'searchable:Int32:false',
      'unsigned_attribute:Bool:true',
      'fixed_prec_scale:Bool:false',
      'auto_increment:Bool:true',
      'local_type_name:Utf8:true',
      'minimum_scale:Int32:true',
      'maximum_scale:Int32:true',
      'sql_data_type:Int32:false',
      'datetime_subcode:Int32:true',
      'num_prec_radix:Int32:true',
      'interval_precision:Int32:true',
    ]);
    const rows = all.toArray().map((row) => row.toJSON());
    expect(rows.map((row) => [row.type_name, row.data_type])).toEqual([
      ['BOOLEAN', -7],
      ['TINYINT', -6],
      ['BIGINT', -5],
      ['BLOB', -3],
      ['DECIMAL', 3],
      ['INTEGER', 4],
      ['SMALLINT', 5],
      ['FLOAT', 6],
      ['DOUBLE', 8],
      ['VARCHAR', 12],
      ['DATE', 91],
      ['TIME', 92],
      ['TIMESTAMP', 93],
    ]);
    const byName = new Map(rows.map((row) => [row.type_name, row]));
    expect(byName.get('VARCHAR')).toMatchObject({ literal_prefix: "'", case_sensitive: true, searchable: 3 });
    expect(byName.get('DECIMAL')?.create_params?.toArray()).toEqual(['precision', 'scale']);
    expect(byName.get('BIGINT')).toMatchObject({
      unsigned_attribute: false,
      num_prec_radix: 10,
      nullable: 1,
    });
    // Datetime types: sql_data_type is the generic XDBC_DATETIME (9), the subcode says which.
    expect(byName.get('DATE')).toMatchObject({ sql_data_type: 9, datetime_subcode: 1 });
    expect(byName.get('VARCHAR')).toMatchObject({ sql_data_type: 12, datetime_subcode: null });
    const one = await fetchTable(stub, cmd('CommandGetXdbcTypeInfo', { dataType: 12 }), auth());
    expect(one.toArray().map((row) => row.type_name)).toEqual(['VARCHAR']);
    const none = await fetchTable(stub, cmd('CommandGetXdbcTypeInfo', { dataType: 2 }), auth());
    expect(none.numRows).toBe(0);
  });

  it('the names the listing gives (spice.public.<name>, public.<name>) resolve on both engines', async () => {
    const count = async (query: string): Promise<number> =>
      Number((await fetchTable(stub, cmd('CommandStatementQuery', { query }), auth())).get(0)?.n);
    expect(await count('SELECT count(*) AS n FROM spice.public.orders')).toBe(40);
    expect(await count('SELECT count(*) AS n FROM "spice"."public"."users"')).toBe(25);
    expect(await count('SELECT count(*) AS n FROM public.orders')).toBe(40);
    expect(await count('SELECT count(*) AS n FROM public.users')).toBe(25);
  });

  it('ListFlights lists the datasets by path, and each ticket streams the whole dataset', async () => {
    const flights = await collect(stub.ListFlights({ expression: Buffer.alloc(0) }, auth()));
    expect(flights.map((info) => info.flightDescriptor.path)).toEqual([['orders'], ['users'], ['late']]);
    const users = flights[1];
    expect(readSchema(users?.schema as Buffer).fields.map((field) => field.name)).toEqual([
      'id',
      'name',
      'score',
      'admin',
      'joined',
    ]);
    const table = tableOf(
      await collect(stub.DoGet({ ticket: users?.endpoint[0]?.ticket.ticket as Buffer }, auth())),
    );
    expect(table.numRows).toBe(25);
    const byPath = await fetchTable(stub, { type: 'PATH', path: ['users'] }, auth());
    expect(byPath.numRows).toBe(25);
  });
});

describe('prepared statements with parameters', () => {
  async function prepare(query: string): Promise<{ handle: Buffer; parameters: Schema; dataset: Schema }> {
    const [result] = await collect(
      stub.DoAction(
        {
          type: 'CreatePreparedStatement',
          body: sqlCommand('ActionCreatePreparedStatementRequest', { query }),
        },
        auth(),
      ),
    );
    const decoded = decodeSqlAny('ActionCreatePreparedStatementResult', result?.body as Buffer);
    return {
      handle: decoded.preparedStatementHandle as Buffer,
      parameters: readSchema(decoded.parameterSchema as Buffer),
      dataset: readSchema(decoded.datasetSchema as Buffer),
    };
  }

  async function bind(handle: Buffer, ipc: Uint8Array, on: FlightStub = stub): Promise<Buffer[]> {
    const put = on.DoPut(auth());
    const answers: Buffer[] = [];
    const done = new Promise<void>((resolve, reject) => {
      put.on('data', (answer: { appMetadata: Buffer }) => answers.push(answer.appMetadata));
      put.on('error', reject);
      put.on('end', resolve);
    });
    splitIpcStream(ipc).forEach((message, index) => {
      put.write({
        ...(index === 0
          ? { flightDescriptor: cmd('CommandPreparedStatementQuery', { preparedStatementHandle: handle }) }
          : {}),
        ...message,
      });
    });
    put.end();
    await done;
    return answers;
  }

  it('create → DoPut parameters → GetFlightInfo/DoGet → close runs the statement with the bound values', async () => {
    const { handle, parameters } = await prepare(
      'SELECT id, customer FROM orders WHERE id >= $1 AND customer = $2 ORDER BY id',
    );
    expect(parameters.fields.map((field) => field.name)).toEqual(['$1', '$2']);
    const values = new Table({
      $1: vectorFromArray([20n], new Int64()),
      $2: vectorFromArray(['customer-2'], new Utf8()),
    });
    await bind(handle, tableToIPC(values, 'stream'));
    const query = cmd('CommandPreparedStatementQuery', { preparedStatementHandle: handle });
    const rows = (await fetchTable(stub, query, auth())).toArray().map((row) => row.toJSON());
    expect(rows).toEqual([
      { id: 23n, customer: 'customer-2' },
      { id: 30n, customer: 'customer-2' },
      { id: 37n, customer: 'customer-2' },
    ]);
    // Bound again with other values, the same handle runs again.
    const [answer] = await bind(
      handle,
      tableToIPC(tableFromArrays({ $1: [36], $2: ['customer-2'] }), 'stream'),
    );
    expect((await fetchTable(stub, query, auth())).toArray().map((row) => Number(row.id))).toEqual([37]);
    await collect(
      stub.DoAction(
        {
          type: 'ClosePreparedStatement',
          body: sqlCommand('ActionClosePreparedStatementRequest', { preparedStatementHandle: handle }),
        },
        auth(),
      ),
    );
    // Closed, the handle still names its statement (as on a replica that never held it), not the
    // values bound here: the handle DoPut answered with carries them.
    const closed = await failure(fetchTable(stub, query, auth()));
    expect([closed.code, closed.details]).toEqual([
      status.INVALID_ARGUMENT,
      'The query has 2 parameter(s) but 0 value(s) were given; pass one value per ? or $n.',
    ]);
    const withValues = decodeSqlMessage('DoPutPreparedStatementResult', answer as Buffer)?.fields
      .preparedStatementHandle as Buffer;
    const again = cmd('CommandPreparedStatementQuery', { preparedStatementHandle: withValues });
    expect((await fetchTable(stub, again, auth())).toArray().map((row) => Number(row.id))).toEqual([37]);
  });

  it('DoPut takes no more parameter bytes than a schema and one batch: a client streaming batches is refused, not buffered without end', async () => {
    const { handle } = await prepare('SELECT id FROM orders WHERE customer = $1');
    const [schema, batch] = splitIpcStream(
      tableToIPC(new Table({ $1: vectorFromArray(['x'.repeat(1024 * 1024)], new Utf8()) }), 'stream'),
    );
    if (schema === undefined || batch === undefined) throw new Error('the IPC stream holds no batch');
    const put = stub.DoPut(auth());
    const refused = await failure(
      new Promise((resolve, reject) => {
        put.on('data', resolve);
        put.on('error', reject);
        put.on('end', resolve);
        put.write({
          flightDescriptor: cmd('CommandPreparedStatementQuery', { preparedStatementHandle: handle }),
          ...schema,
        });
        for (let i = 0; i < 40; i++) put.write(batch);
        put.end();
      }),
    );
    expect(refused.code).toBe(status.INVALID_ARGUMENT);
    expect(refused.details).toBe(
      `The Arrow data sent with DoPut is larger than ${32 * 1024 * 1024} bytes (a schema and one batch of the largest message size); bind exactly one row of parameters per execution.`,
    );
  });

  it('open prepared statements hold at most maxStatementBytes of SQL and values: past it a new one is RESOURCE_EXHAUSTED (a client could hold 1 024 statements of a message each)', async () => {
    const small = await startFlightServer(served.runtime, {
      port: 0,
      apiKey: KEY,
      logger: served.logger,
      maxStatementBytes: 1024 * 1024,
    });
    const smallStub = flightStub(small.address);
    const create = (query: string) =>
      collect(
        smallStub.DoAction(
          {
            type: 'CreatePreparedStatement',
            body: sqlCommand('ActionCreatePreparedStatementRequest', { query }),
          },
          auth(),
        ),
      );
    try {
      const big = `SELECT id FROM orders WHERE customer = $1 -- ${'x'.repeat(300 * 1024)}\n`;
      const [first] = await create(big);
      const refused = await failure(create(big));
      expect(refused.code).toBe(status.RESOURCE_EXHAUSTED);
      expect(refused.details).toBe(
        `More than ${1024 * 1024} bytes of prepared statements (their SQL and bound values) are open on this Flight server; redeem or close them (DoGet, ClosePreparedStatement) before opening more.`,
      );
      // Values bound past the budget are refused too, and the statement keeps its earlier ones.
      const handle = decodeSqlAny('ActionCreatePreparedStatementResult', first?.body as Buffer)
        .preparedStatementHandle as Buffer;
      const values = new Table({ $1: vectorFromArray(['y'.repeat(500 * 1024)], new Utf8()) });
      const put = smallStub.DoPut(auth());
      const tooMuch = await failure(
        new Promise((resolve, reject) => {
          put.on('data', resolve);
          put.on('error', reject);
          put.on('end', resolve);
          splitIpcStream(tableToIPC(values, 'stream')).forEach((message, index) => {
            put.write({
              ...(index === 0
                ? {
                    flightDescriptor: cmd('CommandPreparedStatementQuery', {
                      preparedStatementHandle: handle,
                    }),
                  }
                : {}),
              ...message,
            });
          });
          put.end();
        }),
      );
      expect(tooMuch.code).toBe(status.RESOURCE_EXHAUSTED);
      // Closed, its bytes are free again.
      await collect(
        smallStub.DoAction(
          {
            type: 'ClosePreparedStatement',
            body: sqlCommand('ActionClosePreparedStatementRequest', { preparedStatementHandle: handle }),
          },
          auth(),
        ),
      );
      expect(await create(big)).toHaveLength(1);
    } finally {
      smallStub.close();
      await small.close();
    }
  });

  it('a prepared statement runs on another server (replicas behind a load balancer that spreads calls): its handle carries the statement, the handle DoPut answers with its values', async () => {
    // A second Flight server holds none of the first's prepared statements, as another replica would not.
    const other = await startFlightServer(served.runtime, { port: 0, apiKey: KEY });
    const elsewhere = flightStub(other.address);
    const run = async (on: FlightStub, handle: Buffer) =>
      (
        await fetchTable(
          on,
          cmd('CommandPreparedStatementQuery', { preparedStatementHandle: handle }),
          auth(),
        )
      )
        .toArray()
        .map((row) => Number(row.toJSON().n ?? row.toJSON().id));
    const boundHandle = (answers: Buffer[]) =>
      decodeSqlMessage('DoPutPreparedStatementResult', answers[0] as Buffer)?.fields
        .preparedStatementHandle as Buffer;
    try {
      // Before: NOT_FOUND, 'The prepared statement handle is unknown, closed, or idle…'.
      const plain = await prepare('SELECT count(*) AS n FROM orders');
      expect(await run(elsewhere, plain.handle)).toEqual([40]);
      const { handle } = await prepare('SELECT id FROM orders WHERE id = $1');
      const five = boundHandle(await bind(handle, tableToIPC(tableFromArrays({ $1: [5] }), 'stream')));
      expect(await run(elsewhere, five)).toEqual([5]);
      // Bound on a server that never saw it; the handle it answers with runs here with those values.
      const seven = boundHandle(
        await bind(handle, tableToIPC(tableFromArrays({ $1: [7] }), 'stream'), elsewhere),
      );
      expect(await run(stub, seven)).toEqual([7]);
      // A client that keeps the handle it created binds and runs where it bound (as before).
      expect(await run(stub, handle)).toEqual([5]);
    } finally {
      elsewhere.close();
      await other.close();
    }
  });

  it('CreatePreparedStatement answers with the result schema (the Arrow JDBC driver runs a statement with none as an update), on both engines', async () => {
    // Arrow's JDBC driver prepares every statement and sends it as CommandPreparedStatementUpdate
    // (DoPut) when dataset_schema has no fields: without the schema every SELECT is refused there.
    const duck = await prepare('SELECT id, customer, amount FROM orders WHERE id >= $1 ORDER BY id');
    expect(typesOf(duck.dataset)).toEqual({ id: 'Int64', customer: 'Utf8', amount: 'Decimal[10e+2]' });
    const lite = await prepare('SELECT name, joined FROM users WHERE id = ?');
    expect(typesOf(lite.dataset)).toEqual({ name: 'Utf8', joined: 'Date32<DAY>' });
    const plain = await prepare('SELECT count(*) AS n FROM orders');
    expect(typesOf(plain.dataset)).toEqual({ n: 'Int64' });
    // A statement that is no subquery (a trailing ';', a closing comment) has its schema all the same.
    const ended = await prepare('SELECT id, name FROM users; -- the last one');
    expect(typesOf(ended.dataset)).toEqual({ id: 'Int64', name: 'Utf8' });
    // The statement is checked where it is prepared: an unknown table is NOT_FOUND there.
    const unknown = await failure(prepare('SELECT * FROM nowhere WHERE id = $1'));
    expect(unknown.code).toBe(status.NOT_FOUND);
    for (const { handle } of [duck, lite, plain, ended]) {
      await collect(
        stub.DoAction(
          {
            type: 'ClosePreparedStatement',
            body: sqlCommand('ActionClosePreparedStatementRequest', { preparedStatementHandle: handle }),
          },
          auth(),
        ),
      );
    }
  });

  it("CreatePreparedStatement types each parameter as its engine uses it (Arrow's JDBC driver binds a value only to a typed one)", async () => {
    const duck = await prepare(
      'SELECT id FROM orders WHERE customer = $2 AND amount > $1 AND id IN ($3, 7) LIMIT $4',
    );
    expect(typesOf(duck.parameters)).toEqual({
      $1: 'Decimal[10e+2]',
      $2: 'Utf8',
      $3: 'Int64',
      $4: 'Int64',
    });
    // What only carried the types is not part of the result's schema.
    expect([...duck.dataset.metadata.keys()].filter((key) => key.startsWith('ferry:'))).toEqual([]);
    // A parameter DuckDB cannot type stays Null (ADBC drivers send their values' own types).
    expect(typesOf((await prepare('SELECT $1 AS v, id FROM orders WHERE id = $2')).parameters)).toEqual({
      $1: 'Null',
      $2: 'Int64',
    });
    // SQLite has no parameter types: a parameter takes the type of the column its program compares it with.
    const lite = await prepare('SELECT name FROM users WHERE id = ? AND joined < ? AND name <> ? LIMIT ?');
    expect(typesOf(lite.parameters)).toEqual({ $1: 'Int64', $2: 'Date32<DAY>', $3: 'Utf8', $4: 'Int64' });
    // Bound with the types it was told, the statement runs.
    const { handle } = duck;
    const values = new Table({
      $1: vectorFromArray([10], new Float64()),
      $2: vectorFromArray(['customer-2'], new Utf8()),
      $3: vectorFromArray([23n], new Int64()),
      $4: vectorFromArray([5n], new Int64()),
    });
    await bind(handle, tableToIPC(values, 'stream'));
    const query = cmd('CommandPreparedStatementQuery', { preparedStatementHandle: handle });
    expect((await fetchTable(stub, query, auth())).toArray().map((row) => Number(row.id))).toEqual([23]);
  });

  it('preparing a statement does not run it: a runaway statement is prepared at once, on both engines', async () => {
    for (const query of [
      'SELECT count(*) AS n FROM orders, range(1000000000000) t(i) WHERE id >= $1',
      'SELECT count(*) AS n FROM users a, users b, users c, users d, users e, users f, users g',
    ]) {
      const began = performance.now();
      const { handle, dataset } = await prepare(query);
      // Not the runtime's 30 s query timeout: nothing ran but the statement's LIMIT 0.
      expect(performance.now() - began).toBeLessThan(5_000);
      expect(dataset.fields.map((field) => field.name)).toEqual(['n']);
      await collect(
        stub.DoAction(
          {
            type: 'ClosePreparedStatement',
            body: sqlCommand('ActionClosePreparedStatementRequest', { preparedStatementHandle: handle }),
          },
          auth(),
        ),
      );
    }
  }, 90_000);

  it('a DuckDB statement with $name markers is prepared (one parameter per name) and runs with the bound values', async () => {
    const { handle, parameters } = await prepare(
      'SELECT id FROM orders WHERE id >= $low AND id < $low + $width ORDER BY id',
    );
    expect(parameters.fields).toHaveLength(2);
    await bind(handle, tableToIPC(tableFromArrays({ low: [10], width: [3] }), 'stream'));
    const query = cmd('CommandPreparedStatementQuery', { preparedStatementHandle: handle });
    expect((await fetchTable(stub, query, auth())).toArray().map((row) => Number(row.id))).toEqual([
      10, 11, 12,
    ]);
  });

  it('binds SQLite parameters too, and refuses a parameter batch of several rows', async () => {
    const { handle } = await prepare('SELECT name FROM users WHERE id = ?');
    await bind(handle, tableToIPC(tableFromArrays({ id: [7] }), 'stream'));
    const query = cmd('CommandPreparedStatementQuery', { preparedStatementHandle: handle });
    expect((await fetchTable(stub, query, auth())).toArray().map((row) => row.name)).toEqual(['user 7']);
    const several = await failure(bind(handle, tableToIPC(tableFromArrays({ id: [1, 2] }), 'stream')));
    expect(several.code).toBe(status.INVALID_ARGUMENT);
    expect(several.details).toContain('bind exactly one row');
  });

  it('an Int64 parameter past 2^53 binds as the integer it is: alone in arithmetic too, on both engines, and in a ticket', async () => {
    for (const table of ['orders', 'users']) {
      const { handle } = await prepare(`SELECT $1 + 1 AS a, $1 * 2 AS b, abs($1) AS c FROM ${table} LIMIT 1`);
      const values = new Table({ $1: vectorFromArray([-9007199254740993n], new Int64()) });
      await bind(handle, tableToIPC(values, 'stream'));
      const query = cmd('CommandPreparedStatementQuery', { preparedStatementHandle: handle });
      // Before: DuckDB asked for a cast (the value was bound as text); SQLite's abs() lost the last digit.
      const rows = (await fetchTable(stub, query, auth())).toArray().map((row) => row.toJSON());
      expect(rows, table).toEqual([{ a: -9007199254740992n, b: -18014398509481986n, c: 9007199254740993n }]);
    }
    // A ticket carries such a value exactly, for a server that runs it again.
    const statement = { sql: 'SELECT $1 + 1', params: [9007199254740993n, '9007199254740993'] };
    const ticket = sqlCommand('TicketStatementQuery', {
      statementHandle: statementHandle(Buffer.alloc(16, 3), statement),
    });
    expect(ticketRequest(ticket)).toEqual({ kind: 'ticket', handle: Buffer.alloc(16, 3), statement });
  });

  it('GetSchema (of a statement, of a prepared one) is no cancelled query in the task history: Spice records a schema lookup only when it fails', async () => {
    const history = async (input: string): Promise<unknown[]> => {
      const query = `SELECT error_message FROM spice.runtime.task_history WHERE input = '${input.replaceAll("'", "''")}'`;
      const table = await fetchTable(stub, cmd('CommandStatementQuery', { query }), auth());
      return table.toArray().map((row) => row.error_message);
    };
    const getSchema = (descriptor: ReturnType<typeof cmd>) =>
      call<{ schema: Buffer }>((done) => stub.GetSchema(descriptor, auth(), done));
    const lite = "SELECT count(*) AS n, 'get-schema-lite' AS tag FROM users";
    const duck = "SELECT count(*) AS n, 'get-schema-duck' AS tag FROM orders";
    for (const query of [lite, duck]) await getSchema(cmd('CommandStatementQuery', { query }));
    const prepared = "SELECT id, 'get-schema-prepared' AS tag FROM orders WHERE id >= $1";
    const { handle } = await prepare(prepared);
    await bind(handle, tableToIPC(tableFromArrays({ $1: [30] }), 'stream'));
    const { schema } = await getSchema(
      cmd('CommandPreparedStatementQuery', { preparedStatementHandle: handle }),
    );
    expect(typesOf(readSchema(schema))).toEqual({ id: 'Int64', tag: 'Utf8' });
    // A lookup that fails is recorded, with its engine's error (Spice's handle_schema_error).
    const broken = "SELECT nope, 'get-schema-broken' AS tag FROM orders";
    await failure(getSchema(cmd('CommandStatementQuery', { query: broken })));
    // Run for real, a statement is recorded once, as a query that ran (read after it).
    for (const query of [lite, duck]) await fetchTable(stub, cmd('CommandStatementQuery', { query }), auth());
    // Before: a row 'The query was cancelled…' for each GetSchema besides the run's.
    expect(await history(lite)).toEqual([null]);
    expect(await history(duck)).toEqual([null]);
    expect(await history(prepared)).toEqual([]);
    expect(await history(broken)).toEqual([expect.stringContaining('nope')]);
  });

  it('preparing a statement and listing tables with their schemas leave no row in the task history but a failure, with the statement sent', async () => {
    const history = async (like: string): Promise<unknown[]> => {
      const query = `SELECT input, error_message FROM spice.runtime.task_history WHERE input LIKE '${like}' ORDER BY start_time`;
      const table = await fetchTable(stub, cmd('CommandStatementQuery', { query }), auth());
      return table.toArray().map((row) => [row.input, row.error_message]);
    };
    // A trailing ';' is no subquery: its schema comes from the statement as it is, stopped there.
    const ended = "SELECT id, 'prepared-ended' AS tag FROM users;";
    await prepare(ended);
    await prepare("SELECT id, 'prepared-plain' AS tag FROM orders WHERE id >= $1");
    const broken = "SELECT nope, 'prepared-broken' AS tag FROM orders";
    await failure(prepare(broken));
    // Before: the wrapped statement's error ('…exactly one statement…') and the statement's
    // 'cancelled' for the first; a LIMIT 0 row for the second; two error rows for the third.
    expect(await history('%prepared-%')).toEqual([[broken, expect.stringContaining('nope')]]);
    // A table listed with its schema is the server's own lookup (Spice reads its catalog): no row,
    // not even the "not ready" of a dataset still waiting for its first snapshot.
    await fetchTable(stub, cmd('CommandGetTables', { includeSchema: true }), auth());
    expect(await history('%LIMIT 0')).toEqual([]);
    expect(await history('%"late"%')).toEqual([]);
  });
});

describe('refusals and errors as gRPC status codes', () => {
  it('an INSERT is refused with the runtime guard’s Spice wording and INVALID_ARGUMENT, on every path', async () => {
    const sql = 'INSERT INTO orders VALUES (1)';
    const http = await served.runtime.query(sql).catch((error: Error) => error.message);
    expect(http).toBe(WRITE_REFUSAL);
    const asQuery = await failure(fetchTable(stub, cmd('CommandStatementQuery', { query: sql }), auth()));
    const asPrepared = await failure(
      collect(
        stub.DoAction(
          {
            type: 'CreatePreparedStatement',
            body: sqlCommand('ActionCreatePreparedStatementRequest', { query: sql }),
          },
          auth(),
        ),
      ),
    );
    const put = stub.DoPut(auth());
    const asUpdate = await failure(
      new Promise((resolve, reject) => {
        put.on('data', resolve);
        put.on('error', reject);
        put.on('end', resolve);
        put.write({ flightDescriptor: cmd('CommandStatementUpdate', { query: sql }) });
        put.end();
      }),
    );
    for (const refused of [asQuery, asPrepared, asUpdate]) {
      expect(refused.code).toBe(status.INVALID_ARGUMENT);
      expect(refused.details).toBe(WRITE_REFUSAL);
      expect(refused.metadata.get('ferry-error-code')).toEqual(['ERR_WRITE_REJECTED']);
    }
  });

  it('unknown table → NOT_FOUND, bad SQL → INVALID_ARGUMENT (no local paths), a result over maxStreamBytes → RESOURCE_EXHAUSTED, not ready → UNAVAILABLE', async () => {
    const run = (query: string) => failure(fetchTable(stub, cmd('CommandStatementQuery', { query }), auth()));
    const unknown = await run('SELECT * FROM nowhere');
    expect(unknown.code).toBe(status.NOT_FOUND);
    expect(unknown.details).toContain("Table 'nowhere' is not a dataset");
    const bad = await run('SELECT no_such_column FROM orders');
    expect(bad.code).toBe(status.INVALID_ARGUMENT);
    expect(bad.details).toContain('no_such_column');
    expect(bad.details).not.toMatch(/\/(tmp|work|var)\/|\.duckdb|\.sqlite/);
    const large = await run("SELECT repeat('x', 10000) AS wide FROM orders");
    expect(large.code).toBe(status.RESOURCE_EXHAUSTED);
    expect(large.details).toContain('maxStreamBytes');
    const late = await run('SELECT * FROM late');
    expect(late.code).toBe(status.UNAVAILABLE);
    expect(late.details).toContain("Dataset 'late' is not ready");
  });

  it('a ticket that is neither one of this server nor SQL text (garbage, another Flight server’s) is INVALID_ARGUMENT saying so', async () => {
    const foreign = Buffer.concat([
      Buffer.from([0x0a, 0x21]),
      Buffer.from('type.googleapis.com/other.Ticket'),
      Buffer.from([0x12, 0x04, 0x01, 0x02, 0x03, 0x04]),
    ]);
    for (const ticket of [Buffer.from([0xde, 0xad, 0xbe, 0xef, 0x01, 0x02]), foreign]) {
      const refused = await failure(collect(stub.DoGet({ ticket }, auth())));
      expect(refused.code).toBe(status.INVALID_ARGUMENT);
      expect(refused.details).toMatch(/^The ticket is neither a ticket this server issued nor SQL text/);
      const described = await failure(fetchTable(stub, { type: 'CMD', cmd: ticket }, auth()));
      expect(described.code).toBe(status.INVALID_ARGUMENT);
      expect(described.details).toMatch(/^The command is neither a Flight SQL command nor SQL text/);
    }
    // A statement ticket whose pins are not snapshot ids (another build's, or altered) says so too (INTERNAL before).
    for (const snapshots of ['{"users":"x"}', '[1]', '{"users":-1}']) {
      const handle = Buffer.concat([
        Buffer.alloc(16, 7),
        Buffer.from(`{"sql":"SELECT 1 AS x","params":[],"snapshots":${snapshots}}`),
      ]);
      const ticket = sqlCommand('TicketStatementQuery', { statementHandle: handle });
      const refused = await failure(collect(stub.DoGet({ ticket }, auth())));
      expect([refused.code, refused.details]).toEqual([
        status.INVALID_ARGUMENT,
        'The ticket is neither a ticket this server issued nor SQL text; redeem the ticket GetFlightInfo returned.',
      ]);
    }
    // SQL text as the ticket, as Spice's clients may send it, still runs.
    const sql = tableOf(
      await collect(stub.DoGet({ ticket: Buffer.from('SELECT count(*) AS n\nFROM users') }, auth())),
    );
    expect(Number(sql.get(0)?.n)).toBe(25);
  });

  it('a ticket is redeemed on another server (replicas behind a load balancer that spreads calls), again once its result was taken, and after maxTickets dropped it: its statement runs there', async () => {
    // A second Flight server holds none of the first's waiting results, as another replica would not.
    const other = await startFlightServer(served.runtime, { port: 0, apiKey: KEY });
    const elsewhere = flightStub(other.address);
    const rows = (table: Table) => table.toArray().map((row) => `${row.id} ${row.name}`);
    try {
      const query = 'SELECT id, name FROM users WHERE id < 3 ORDER BY id';
      const info = await call<FlightInfoMessage>((done) =>
        stub.GetFlightInfo(cmd('CommandStatementQuery', { query }), auth(), done),
      );
      const ticket = info.endpoint[0]?.ticket.ticket as Buffer;
      const expected = ['0 user 0', '1 user 1', '2 user 2'];
      // Before, NOT_FOUND: 'The ticket is unknown, already redeemed, or older than 60000 ms'.
      expect(rows(tableOf(await collect(elsewhere.DoGet({ ticket }, auth()))))).toEqual(expected);
      expect(rows(tableOf(await collect(stub.DoGet({ ticket }, auth()))))).toEqual(expected);
      expect(rows(tableOf(await collect(stub.DoGet({ ticket }, auth()))))).toEqual(expected);
    } finally {
      elsewhere.close();
      await other.close();
    }
    // At maxTickets, a new result drops the oldest waiting one (RESOURCE_EXHAUSTED before): results
    // whose DoGet went to another replica no longer refuse every GetFlightInfo until they expire.
    const small = await startFlightServer(served.runtime, { port: 0, apiKey: KEY, maxTickets: 2 });
    const smallStub = flightStub(small.address);
    try {
      const tickets: Buffer[] = [];
      for (const id of [0, 1, 2]) {
        const query = `SELECT id, name FROM users WHERE id = ${id}`;
        const info = await call<FlightInfoMessage>((done) =>
          smallStub.GetFlightInfo(cmd('CommandStatementQuery', { query }), auth(), done),
        );
        tickets.push(info.endpoint[0]?.ticket.ticket as Buffer);
      }
      for (const [id, ticket] of tickets.entries()) {
        expect(rows(tableOf(await collect(smallStub.DoGet({ ticket }, auth()))))).toEqual([
          `${id} user ${id}`,
        ]);
      }
    } finally {
      smallStub.close();
      await small.close();
    }
    // The statement a ticket carries keeps its parameters and pins.
    const statement = { sql: 'SELECT $1', params: [7, 'x', null], snapshots: { users: 1 } };
    const handle = statementHandle(Buffer.alloc(16, 1), statement);
    const ticket = sqlCommand('TicketStatementQuery', { statementHandle: handle });
    expect(ticketRequest(ticket)).toEqual({ kind: 'ticket', handle: Buffer.alloc(16, 1), statement });
    // A parameter JSON cannot carry (NaN, Infinity: they would run again as NULL) keeps the
    // statement out of the ticket: redeemed where it was issued, or NOT_FOUND, never another answer.
    const nan = statementHandle(Buffer.alloc(16, 2), { sql: 'SELECT $1', params: [Number.NaN] });
    expect(ticketRequest(sqlCommand('TicketStatementQuery', { statementHandle: nan }))).toEqual({
      kind: 'ticket',
      handle: Buffer.alloc(16, 2),
    });
  });

  it('GetSchema gives the types an SQLite statement answers with (it runs until its schema is known)', async () => {
    // Under LIMIT 0 an SQLite expression has no values to be typed by: count(*) would say Utf8.
    const query = 'SELECT count(*) AS n, max(score) AS top FROM users';
    const schema = await call<{ schema: Buffer }>((done) =>
      stub.GetSchema(cmd('CommandStatementQuery', { query }), auth(), done),
    );
    expect(typesOf(readSchema(schema.schema))).toEqual({ n: 'Int64', top: 'Float64' });
  });

  it('a statement’s error reaches the client in the engine’s words, slashes in the SQL included (no file where there is none)', async () => {
    for (const query of [
      "SELECT * FROM orders WHERE placed = '2026/13/01'",
      'SELECT nope/2/3 FROM orders',
      "SELECT CAST('1/2/3' AS INTEGER) AS x FROM orders",
    ]) {
      const embedded = await served.runtime.query(query).then(
        () => 'answered',
        (error: Error) => error.message,
      );
      const refused = await failure(fetchTable(stub, cmd('CommandStatementQuery', { query }), auth()));
      expect(refused.code).toBe(status.INVALID_ARGUMENT);
      expect(refused.details).toBe(embedded);
      expect(refused.details).not.toContain('<snapshot file>');
    }
  });

  it('a prepared statement action whose body packs another message is INVALID_ARGUMENT naming the one expected (not INTERNAL)', async () => {
    const bodies = [
      [
        'CreatePreparedStatement',
        sqlCommand('ActionClosePreparedStatementRequest', { preparedStatementHandle: Buffer.from('x') }),
      ],
      ['ClosePreparedStatement', sqlCommand('CommandStatementQuery', { query: 'SELECT 1' })],
    ] as const;
    for (const [type, body] of bodies) {
      const refused = await failure(collect(stub.DoAction({ type, body }, auth())));
      expect([refused.code, refused.details]).toEqual([
        status.INVALID_ARGUMENT,
        `The ${type} action's body is not an Action${type}Request; send one, packed in a google.protobuf.Any.`,
      ]);
    }
    // The bare request (not in an Any), as some clients send it, is taken.
    const body = encodeSql('ActionCreatePreparedStatementRequest', { query: 'SELECT 1 AS x' });
    expect(await collect(stub.DoAction({ type: 'CreatePreparedStatement', body }, auth()))).toHaveLength(1);
  });

  it('DoExchange and unknown actions are UNIMPLEMENTED', async () => {
    const action = await failure(
      collect(stub.DoAction({ type: 'BeginTransaction', body: Buffer.alloc(0) }, auth())),
    );
    expect(action.code).toBe(status.UNIMPLEMENTED);
  });
});

describe('binding', () => {
  it('a port in use rejects, and the server on it keeps serving', async () => {
    await expect(startFlightServer(served.runtime, { port: served.flight.port })).rejects.toThrow(
      /No address added/,
    );
    const table = await fetchTable(
      stub,
      cmd('CommandStatementQuery', { query: 'SELECT count(*) AS n FROM users' }),
      auth(),
    );
    expect(Number(table.get(0)?.n)).toBe(25);
  });
});

describe('API key', () => {
  it('a missing or wrong key is UNAUTHENTICATED on every call', async () => {
    const query = cmd('CommandStatementQuery', { query: 'SELECT 1 AS x FROM users' });
    for (const metadata of [bearer(), bearer('wrong-key')]) {
      const info = await failure(call((done) => stub.GetFlightInfo(query, metadata, done)));
      const get = await failure(
        collect(stub.DoGet({ ticket: Buffer.from('SELECT 1 FROM users') }, metadata)),
      );
      const list = await failure(collect(stub.ListFlights({ expression: Buffer.alloc(0) }, metadata)));
      const action = await failure(
        collect(stub.DoAction({ type: 'CreatePreparedStatement', body: Buffer.alloc(0) }, metadata)),
      );
      expect([info.code, get.code, list.code, action.code]).toEqual(Array(4).fill(status.UNAUTHENTICATED));
    }
  });

  it('a Basic auth handshake with the key as password hands out the bearer token (Lance’s Flight SQL client)', async () => {
    const client = await LanceClient.connect({
      host: served.flight.address,
      username: 'anyone',
      password: KEY,
      insecure: true,
    });
    const result = await client.query('SELECT id, name FROM users WHERE id < 3 ORDER BY id');
    expect((await result.collectToObjects()).map((row) => (row as { toJSON(): unknown }).toJSON())).toEqual([
      { id: 0n, name: 'user 0' },
      { id: 1n, name: 'user 1' },
      { id: 2n, name: 'user 2' },
    ]);
    await expect(
      LanceClient.connect({
        host: served.flight.address,
        username: 'anyone',
        password: 'wrong',
        insecure: true,
      }),
    ).rejects.toThrow(/UNAUTHENTICATED|Unauthenticated|16/);
  });
});
