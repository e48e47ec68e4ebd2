/**
 * Timestamp parameters bound with DoPut, in every Arrow unit a client may send them (seconds from
 * a driver that rounds, milliseconds from a JS Date, microseconds, nanoseconds), against the same
 * timestamps stored in a DuckDB and an SQLite snapshot: SQLite compares the text the writer stored
 * (ISO 8601 to the microsecond), so a parameter must read the same instant as the same text.
 */

import {
  Field,
  makeData,
  RecordBatch,
  Schema,
  Struct,
  Table,
  type Timestamp,
  TimestampMicrosecond,
  TimestampMillisecond,
  TimestampNanosecond,
  TimestampSecond,
  tableToIPC,
} from 'apache-arrow';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { splitIpcStream } from '../src/index.js';
import {
  bearer,
  collect,
  decodeSqlAny,
  type FlightStub,
  fetchTable,
  flightStub,
  type Served,
  serveDatasets,
  sqlCommand,
} from './support.js';

const VISITS_SQL = `SELECT i::BIGINT AS id, TIMESTAMP '2026-11-29 08:00:00' + INTERVAL (i * 1500) MILLISECOND AS seen
FROM range(10) t(i)`;

let served: Served;
let stub: FlightStub;

beforeAll(async () => {
  served = await serveDatasets(
    [
      { name: 'visits_duckdb', engine: 'duckdb', sql: VISITS_SQL },
      { name: 'visits_sqlite', engine: 'sqlite', sql: VISITS_SQL },
    ],
    { prefix: 'timestamp-parameters/' },
  );
  stub = flightStub(served.flight.address);
});

afterAll(async () => {
  stub?.close();
  await served?.close();
});

const cmd = (name: string, fields: Record<string, unknown>) => ({
  type: 'CMD' as const,
  cmd: sqlCommand(name, fields),
});

/** One row of one timestamp parameter `$1` of `type`, holding `units` of its unit since the epoch. */
function timestampRow(type: Timestamp, units: bigint): Table {
  const data = makeData({ type, length: 1, nullCount: 0, data: new BigInt64Array([units]) });
  const fields = [new Field('$1', type)];
  const row = makeData({ type: new Struct(fields), length: 1, nullCount: 0, children: [data] });
  return new Table([new RecordBatch(new Schema(fields), row)]);
}

async function idsWith(query: string, parameters: Table): Promise<number[]> {
  const [created] = await collect(
    stub.DoAction(
      {
        type: 'CreatePreparedStatement',
        body: sqlCommand('ActionCreatePreparedStatementRequest', { query }),
      },
      bearer(),
    ),
  );
  const handle = decodeSqlAny('ActionCreatePreparedStatementResult', created?.body as Buffer)
    .preparedStatementHandle as Buffer;
  const put = stub.DoPut(bearer());
  const done = new Promise<void>((resolve, reject) => {
    put.on('data', () => undefined);
    put.on('error', reject);
    put.on('end', resolve);
  });
  splitIpcStream(tableToIPC(parameters, 'stream')).forEach((message, index) => {
    put.write({
      ...(index === 0
        ? { flightDescriptor: cmd('CommandPreparedStatementQuery', { preparedStatementHandle: handle }) }
        : {}),
      ...message,
    });
  });
  put.end();
  await done;
  const table = await fetchTable(
    stub,
    cmd('CommandPreparedStatementQuery', { preparedStatementHandle: handle }),
  );
  return table.toArray().map((row) => Number(row.id));
}

describe('timestamp parameters', () => {
  // 08:00:03 is visit 2's time: whole seconds, so every unit can say it.
  const seconds = BigInt(Date.parse('2026-11-29T08:00:03Z') / 1000);
  it.each([
    ['seconds', new TimestampSecond(), seconds],
    ['milliseconds', new TimestampMillisecond(), seconds * 1_000n],
    ['microseconds', new TimestampMicrosecond(), seconds * 1_000_000n],
    ['nanoseconds', new TimestampNanosecond(), seconds * 1_000_000_000n],
  ] as const)('in %s find the same rows on DuckDB and SQLite (=, <=, >)', async (_unit, type, units) => {
    for (const dataset of ['visits_duckdb', 'visits_sqlite']) {
      const row = timestampRow(type, units);
      expect(await idsWith(`SELECT id FROM ${dataset} WHERE seen = $1 ORDER BY id`, row)).toEqual([2]);
      expect(await idsWith(`SELECT id FROM ${dataset} WHERE seen <= $1 ORDER BY id`, row)).toEqual([0, 1, 2]);
      expect(await idsWith(`SELECT id FROM ${dataset} WHERE seen > $1 ORDER BY id LIMIT 1`, row)).toEqual([
        3,
      ]);
    }
  });
});
