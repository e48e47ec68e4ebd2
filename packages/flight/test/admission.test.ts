/**
 * Admission control over Arrow Flight, through a plain `@grpc/grpc-js` stub of Flight.proto with
 * FlightSql.proto messages (a client nobody here wrote): with the runtime's `maxQueriesInFlight`
 * queries admitted (streams held open and unread), a Flight SQL statement fails at once with
 * RESOURCE_EXHAUSTED and `ferry-error-code: ERR_QUERY_REJECTED`; once they end it is answered. A
 * GetFlightInfo or GetSchema its client cancels stops its statement and gives its admission back.
 */
import type { RuntimeQueryStream } from '@ferry/runtime';
import { queriesInFlight, queryAdmission } from '@ferry/runtime/testing';
import { status } from '@grpc/grpc-js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  bearer,
  type FlightStub,
  fetchTable,
  flightStub,
  ORDERS_SQL,
  type Served,
  serveDatasets,
  sqlCommand,
} from './support.js';

const CAP = 2;
let served: Served;
let stub: FlightStub;

beforeAll(async () => {
  served = await serveDatasets([{ name: 'orders', engine: 'duckdb', sql: ORDERS_SQL }], {
    prefix: 'flight-admission/',
    runtime: { maxQueriesInFlight: CAP },
  });
  stub = flightStub(served.flight.address);
});

afterAll(async () => {
  stub?.close();
  await served?.close();
});

const statement = (query: string) => ({
  type: 'CMD' as const,
  cmd: sqlCommand('CommandStatementQuery', { query }),
});

async function drained(): Promise<void> {
  const started = performance.now();
  while (queriesInFlight(served.runtime) > 0 || queryAdmission(served.runtime).inFlight > 0) {
    if (performance.now() - started > 15_000) throw new Error('a query still runs');
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

describe('admission over Flight', () => {
  it('fails a statement past the cap with RESOURCE_EXHAUSTED at once, and answers it once the queries end', async () => {
    const streams: RuntimeQueryStream[] = [];
    for (let n = 0; n < CAP; n++) {
      streams.push(
        await served.runtime.queryStream('SELECT * FROM range(100000000) t(i)', [], { batchRows: 1024 }),
      );
    }
    try {
      const began = performance.now();
      const refused = await fetchTable(stub, statement('SELECT count(*) AS n FROM orders'), bearer()).then(
        () => undefined,
        (error: unknown) =>
          error as { code: number; details: string; metadata: { get(key: string): unknown[] } },
      );
      expect(performance.now() - began).toBeLessThan(2_000);
      expect(refused?.code).toBe(status.RESOURCE_EXHAUSTED);
      expect(refused?.details).toMatch(/already has 2 queries in flight.*maxQueriesInFlight/);
      expect(refused?.metadata.get('ferry-error-code')).toEqual(['ERR_QUERY_REJECTED']);
    } finally {
      for (const stream of streams) stream.cancel();
    }
    await drained();
    const table = await fetchTable(stub, statement('SELECT count(*) AS n FROM orders'), bearer());
    expect(Number(table.getChild('n')?.get(0))).toBe(40);
  });

  it('a GetFlightInfo or GetSchema its client cancels while the statement runs stops the statement (and frees its admission)', async () => {
    const runaway = statement('SELECT count(*) AS n FROM orders, range(1000000000000)');
    for (const ask of [
      () => stub.GetFlightInfo(runaway, bearer(), () => undefined),
      () => stub.GetSchema(runaway, bearer(), () => undefined),
    ]) {
      const asked = ask();
      while (queriesInFlight(served.runtime) === 0) await new Promise((resolve) => setTimeout(resolve, 10));
      asked.cancel();
      const began = performance.now();
      // Not the runtime's 30 s query timeout: the cancellation stops it.
      await drained();
      expect(performance.now() - began).toBeLessThan(5_000);
    }
  });
});
