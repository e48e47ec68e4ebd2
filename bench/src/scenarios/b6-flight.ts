/**
 * B6 flight: the same large result (1 000 000 rows; 100 000 with --quick) fetched end to end over
 * Arrow Flight (GetFlightInfo + DoGet, read with apache-arrow as a stream, as Spice's SDKs do) and
 * over the HTTP JSON API (`POST /v1/sql`, the body parsed with JSON.parse), from one runtime in
 * this process. Rounds alternate between the two, so other load on the machine falls on both; each
 * side's rows/s is its rows over its wall time, and the ratio is Flight / HTTP.
 */
import { performance } from 'node:perf_hooks';
import { FLIGHT_PROTO, flightDataToIpc, PROTO_LOADER_OPTIONS, startFlightServer } from '@ferry/flight';
import { startServer } from '@ferry/server';
import {
  type ChannelCredentials,
  type ClientReadableStream,
  credentials,
  loadPackageDefinition,
  Metadata,
  type ServiceError,
} from '@grpc/grpc-js';
import { loadSync } from '@grpc/proto-loader';
import { RecordBatchReader } from 'apache-arrow';
import { buildFile, keyedColumns, QUERY_COLUMNS } from '../data.js';
import { formatRatio, formatValue } from '../format.js';
import { startRuntime } from '../harness.js';
import { type Measurement, ratio, type Scenario } from '../scenario.js';
import { locationOf, spicepod } from '../spicepod.js';

const PREFIX = 'b6/';
const DATASET = 'wide';

interface FlightData {
  readonly dataHeader: Buffer;
  readonly dataBody: Buffer;
}

interface FlightStub {
  GetFlightInfo(
    descriptor: { type: 'CMD'; cmd: Buffer },
    metadata: Metadata,
    done: (error: ServiceError | null, info?: { endpoint: { ticket: { ticket: Buffer } }[] }) => void,
  ): void;
  DoGet(ticket: { ticket: Buffer }, metadata: Metadata): ClientReadableStream<FlightData>;
  close(): void;
}

function flightClient(address: string): FlightStub {
  const loaded = loadPackageDefinition(loadSync(FLIGHT_PROTO, PROTO_LOADER_OPTIONS)) as unknown as {
    arrow: {
      flight: { protocol: { FlightService: new (address: string, creds: ChannelCredentials) => FlightStub } };
    };
  };
  return new loaded.arrow.flight.protocol.FlightService(address, credentials.createInsecure());
}

interface Fetched {
  readonly rows: number;
  readonly idSum: bigint;
  readonly ms: number;
}

/** GetFlightInfo with the SQL as the command (as Spice's SDKs send it), then DoGet read batch by batch. */
async function overFlight(stub: FlightStub, sql: string): Promise<Fetched> {
  const began = performance.now();
  const info = await new Promise<{ endpoint: { ticket: { ticket: Buffer } }[] }>((resolve, reject) =>
    stub.GetFlightInfo({ type: 'CMD', cmd: Buffer.from(sql) }, new Metadata(), (error, value) =>
      error || value === undefined ? reject(error) : resolve(value),
    ),
  );
  const stream = stub.DoGet({ ticket: info.endpoint[0]?.ticket.ticket as Buffer }, new Metadata());
  async function* ipc() {
    for await (const message of stream as AsyncIterable<FlightData>) yield flightDataToIpc(message);
  }
  let rows = 0;
  let idSum = 0n;
  for await (const batch of await RecordBatchReader.from(ipc())) {
    rows += batch.numRows;
    for (const id of (batch.getChild('id')?.toArray() ?? []) as BigInt64Array) idSum += id;
  }
  return { rows, idSum, ms: performance.now() - began };
}

/** `POST /v1/sql` with the SQL as text, the JSON array parsed. */
async function overHttp(url: string, sql: string): Promise<Fetched> {
  const began = performance.now();
  const response = await fetch(`${url}/v1/sql`, {
    method: 'POST',
    headers: { 'content-type': 'text/plain' },
    body: sql,
  });
  if (response.status !== 200)
    throw new Error(`POST /v1/sql answered ${response.status}: ${await response.text()}`);
  const rows = (await response.json()) as { id: number }[];
  let idSum = 0n;
  for (const row of rows) idSum += BigInt(row.id);
  return { rows: rows.length, idSum, ms: performance.now() - began };
}

/** The result size the goal is stated for. */
const GOAL_ROWS = 1_000_000;
export const b6: Scenario = {
  id: 'b6',
  title: 'B6 flight',
  measures:
    'rows/s fetching one large result (1 000 000 rows of id, version, category, amount, qty, note) end to end over Arrow Flight (GetFlightInfo + DoGet, streamed Arrow batches)',
  baseline:
    'the same result over the HTTP JSON API (POST /v1/sql, JSON.parse), same runtime, same run, alternating rounds',
  goal: 'Flight throughput ≥ 2× HTTP JSON',
  async run(context) {
    const rows = context.quick ? 100_000 : GOAL_ROWS;
    const rounds = context.quick ? 2 : 3;
    context.log(`building a ${rows}-row DuckDB file`);
    const file = await buildFile(context.workDir, 'duckdb', DATASET, rows, keyedColumns(1, QUERY_COLUMNS));
    await context.aws.publish({
      dataset: DATASET,
      location: locationOf(PREFIX),
      file: file.path,
      engine: 'duckdb',
    });
    const { runtime, logger } = await startRuntime(
      context,
      spicepod({
        aws: context.aws.info,
        prefix: PREFIX,
        direct: true,
        datasets: [{ name: DATASET, engine: 'duckdb', interval: '1h' }],
      }),
      // HTTP JSON answers through runtime.query, which materialises the rows: let it hold all.
      { maxResultRows: rows },
    );
    const sql = `SELECT * FROM ${DATASET}`;
    const totals = { flight: { rows: 0, ms: 0 }, http: { rows: 0, ms: 0 }, query: { ms: 0 } };
    const notes: string[] = [];
    try {
      await runtime.ready(undefined, { timeoutMs: 120_000 });
      const flight = await startFlightServer(runtime, { port: 0 });
      const http = await startServer(runtime, { port: 0 });
      const stub = flightClient(flight.address);
      try {
        // Warm both paths (thread start, first file reads, JIT) on a small result.
        await overFlight(stub, `${sql} LIMIT 1000`);
        await overHttp(http.url, `${sql} LIMIT 1000`);
        for (let round = 0; round < rounds; round++) {
          const began = performance.now();
          const stream = await runtime.queryStream(sql, []);
          for await (const _batch of stream.batches);
          const queryMs = performance.now() - began;
          const viaFlight = await overFlight(stub, sql);
          const viaHttp = await overHttp(http.url, sql);
          if (viaFlight.rows !== rows || viaHttp.rows !== rows || viaFlight.idSum !== viaHttp.idSum) {
            throw new Error(
              `round ${round}: Flight returned ${viaFlight.rows} rows (id sum ${viaFlight.idSum}), HTTP ${viaHttp.rows} (id sum ${viaHttp.idSum}); expected ${rows} each`,
            );
          }
          totals.flight.rows += viaFlight.rows;
          totals.flight.ms += viaFlight.ms;
          totals.http.rows += viaHttp.rows;
          totals.http.ms += viaHttp.ms;
          totals.query.ms += queryMs;
          context.log(
            `round ${round + 1}: runtime.queryStream ${queryMs.toFixed(0)} ms, Flight ${viaFlight.ms.toFixed(0)} ms, HTTP ${viaHttp.ms.toFixed(0)} ms`,
          );
        }
      } finally {
        stub.close();
        await flight.close();
        await http.close();
      }
    } finally {
      await runtime.close();
    }
    const flightRate = totals.flight.rows / (totals.flight.ms / 1000);
    const httpRate = totals.http.rows / (totals.http.ms / 1000);
    const speedup = ratio(flightRate, httpRate);
    // What each transport adds to the runtime's own Arrow stream of the same result.
    const flightExtra = Math.max(0, totals.flight.ms - totals.query.ms) / rounds;
    const httpExtra = Math.max(0, totals.http.ms - totals.query.ms) / rounds;
    const measurements: Measurement[] = [
      {
        group: `${rows.toLocaleString('en-US')}-row result`,
        metric: 'throughput, Flight (DoGet, Arrow batches)',
        unit: 'rows/s',
        value: flightRate,
        baseline: httpRate,
        baselineLabel: 'HTTP JSON (POST /v1/sql)',
        ratio: speedup,
      },
      {
        group: `${rows.toLocaleString('en-US')}-row result`,
        metric: 'time per fetch, Flight',
        unit: 'ms',
        value: totals.flight.ms / rounds,
        baseline: totals.http.ms / rounds,
        baselineLabel: 'HTTP JSON',
        ratio: ratio(totals.flight.ms, totals.http.ms),
      },
      {
        group: `${rows.toLocaleString('en-US')}-row result`,
        metric: 'time per fetch beyond runtime.queryStream (transport), Flight',
        unit: 'ms',
        value: flightExtra,
        baseline: httpExtra,
        baselineLabel: 'HTTP JSON',
        ratio: ratio(flightExtra, httpExtra),
      },
      {
        group: `${rows.toLocaleString('en-US')}-row result`,
        metric: 'runtime.queryStream alone (Arrow batches, drained in process)',
        unit: 'ms',
        value: totals.query.ms / rounds,
      },
    ];
    notes.push(
      `Table: ${rows.toLocaleString('en-US')} rows (id, version, category, amount, qty, note), DuckDB file ${formatValue(file.size / 2 ** 20, 'MiB')}; ${rounds} alternating rounds per side after one warm-up fetch each.`,
      'Both sides include running the query. Flight reads runtime.queryStream: the DuckDB query pool builds Arrow batches of 8 192 rows, each produced once the one before is taken, and the server writes each as gRPC takes it. HTTP JSON reads runtime.query (the rows materialised as JSON-safe values, maxResultRows raised to the row count) and sends one JSON array. runtime.queryStream alone (measured in the same rounds) is the floor of the Flight path.',
      'Clients run in the same process as the servers (loopback), so both sides pay for both ends.',
    );
    if (logger.counts.error > 0)
      notes.push(`Runtime logged ${logger.counts.error} errors: ${logger.problems.join(' | ')}`);
    return {
      measurements,
      goals: [
        {
          goal: `Flight throughput ≥ 2× HTTP JSON for one ${GOAL_ROWS.toLocaleString('en-US')}-row result`,
          measured: `${rows.toLocaleString('en-US')} rows: ${formatValue(flightRate, 'rows/s')} vs ${formatValue(httpRate, 'rows/s')} = ${formatRatio(speedup)}`,
          met: speedup >= 2,
          at: { size: GOAL_ROWS, unit: 'rows', ran: rows },
        },
      ],
      notes,
      raw: { rows, rounds, totals },
    };
  },
};
