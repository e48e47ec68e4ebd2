/**
 * The limits of a query over Arrow Flight, through a plain `@grpc/grpc-js` stub of Flight.proto:
 * a statement past the query timeout fails with DEADLINE_EXCEEDED and `ferry-error-code:
 * ERR_QUERY_TIMEOUT` on both engines (stopped in its engine, not answered INTERNAL), and a DoGet
 * whose client stops reading is ended with DEADLINE_EXCEEDED (`ERR_STREAM_IDLE`) after the idle
 * limit, even though the server is blocked writing to it.
 */
import { status } from '@grpc/grpc-js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  bearer,
  call,
  type FlightInfoMessage,
  type FlightStub,
  fetchTable,
  flightStub,
  ORDERS_SQL,
  type Served,
  serveDatasets,
  sqlCommand,
  USERS_SQL,
} from './support.js';

const TIMEOUT_MS = 2_000;
const IDLE_MS = 1_500;
let served: Served;
let stub: FlightStub;

beforeAll(async () => {
  served = await serveDatasets(
    [
      { name: 'orders', engine: 'duckdb', sql: ORDERS_SQL },
      { name: 'users', engine: 'sqlite', sql: USERS_SQL },
    ],
    { prefix: 'flight-limits/', runtime: { queryTimeoutMs: TIMEOUT_MS, streamIdleTimeoutMs: IDLE_MS } },
  );
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

type GrpcFailure = { code: number; details: string; metadata: { get(key: string): unknown[] } };

describe('query limits over Flight', () => {
  it.each([
    ['orders', 'SELECT count(*) AS n FROM orders, range(1000000000000) t(i)'],
    [
      'users',
      'WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT count(*) AS n FROM c, users',
    ],
  ])('%s: a runaway statement fails with DEADLINE_EXCEEDED (ERR_QUERY_TIMEOUT)', async (_dataset, sql) => {
    const failure = await fetchTable(stub, statement(sql), bearer()).then(
      () => undefined,
      (error: unknown) => error as GrpcFailure,
    );
    expect(failure?.code).toBe(status.DEADLINE_EXCEEDED);
    expect(failure?.details).toMatch(/ran longer than 2000 ms and was cancelled/);
    expect(failure?.metadata.get('ferry-error-code')).toEqual(['ERR_QUERY_TIMEOUT']);
  });

  it('a DoGet whose client stops reading ends with DEADLINE_EXCEEDED (ERR_STREAM_IDLE) after the idle limit', async () => {
    const info = await call<FlightInfoMessage>((done) =>
      stub.GetFlightInfo(
        statement("SELECT i, repeat('x', 100) AS pad FROM range(1000000000) t(i)"),
        bearer(),
        done,
      ),
    );
    const ticket = info.endpoint[0]?.ticket.ticket as Buffer;
    const stream = stub.DoGet({ ticket }, bearer());
    const ended = new Promise<GrpcFailure | 'complete'>((resolve) => {
      stream.on('error', (error) => resolve(error as unknown as GrpcFailure));
      stream.on('end', () => resolve('complete'));
    });
    // The first message, then nothing is read until the server has given up on this reader.
    await new Promise<void>((resolve) => stream.once('data', () => resolve()));
    stream.pause();
    await served.logger.waitFor(
      (record) => record.level === 'warn' && /ERR_STREAM_IDLE/.test(JSON.stringify(record)),
    );
    stream.resume();
    const outcome = await ended;
    expect(outcome).not.toBe('complete');
    expect((outcome as GrpcFailure).code).toBe(status.DEADLINE_EXCEEDED);
    expect((outcome as GrpcFailure).metadata.get('ferry-error-code')).toEqual(['ERR_STREAM_IDLE']);
  });
});
