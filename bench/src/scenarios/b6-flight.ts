/**
 * B6 columnar results (issue 25): one large result — `SELECT id, name, amount FROM big`, 1 000 000
 * rows of BIGINT, VARCHAR, DOUBLE (100 000 with --quick) — read end to end by the clients a user
 * would use, against DuckDB's own node-api reading the same query on the same file into JS
 * columns (`runAndReadAll()` + `getColumns()`, the baseline) in the same rounds:
 *
 *   - Flight: Spice's JS SDK (`@spiceai/spice`, Flight only) `client.sql()`: GetFlightInfo + DoGet,
 *     the batches decoded into an apache-arrow Table;
 *   - HTTP JSON: `POST /v1/sql`, the body parsed with `response.json()`;
 *   - HTTP Arrow: `POST /v1/sql` with `Accept: application/vnd.apache.arrow.stream`, the IPC stream
 *     read into a Table.
 *
 * Rounds alternate between the four, so other load on the machine falls on all of them. Then
 * memory: 10 000 000 rows (1 000 000 with --quick) streamed on every protocol to a client in a
 * child process that reads slowly; the runtime's process is sampled meanwhile and its peak growth
 * is compared with the stream window (batches in flight × batch size, plus the socket buffers).
 */
import { fork } from 'node:child_process';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { DuckDBInstance } from '@duckdb/node-api';
import { DEFAULT_WRITE_WINDOW_BYTES, startFlightServer } from '@ferry/flight';
import { startServer, TEXT_BATCH_ROWS } from '@ferry/server';
import { SpiceClient } from '@spiceai/spice';
import { type Table, tableFromIPC } from 'apache-arrow';
import { buildFile, type Column } from '../data.js';
import { formatRatio, formatValue } from '../format.js';
import { startRuntime } from '../harness.js';
import { type GoalCheck, type Measurement, median, ratio, type Scenario } from '../scenario.js';
import type { SlowClientHold, SlowClientReport, SlowClientRequest, SlowProtocol } from '../slow-client.js';
import { locationOf, spicepod } from '../spicepod.js';

const PREFIX = 'b6/';
/** The result sizes the goals are stated for. */
const GOAL_ROWS = 1_000_000;
const GOAL_STREAMED_ROWS = 10_000_000;
const DATASET = 'big';
const STREAMED = 'huge';
const SQL = `SELECT id, name, amount FROM ${DATASET}`;
const ARROW = 'application/vnd.apache.arrow.stream';

/** BIGINT, VARCHAR (`customer-<id>`: 10–16 bytes, most past DuckDB's 12-byte inline strings), DOUBLE. */
const COLUMNS: readonly Column[] = [
  { name: 'id', sqliteType: 'INTEGER', duckdb: 'i::BIGINT', sqlite: 'i' },
  { name: 'name', sqliteType: 'TEXT', duckdb: "'customer-' || i::VARCHAR", sqlite: "'customer-' || i" },
  {
    name: 'amount',
    sqliteType: 'REAL',
    duckdb: '((i * 7919) % 100000 / 100.0)::DOUBLE',
    sqlite: '((i * 7919) % 100000) / 100.0',
  },
];

interface Fetched {
  readonly rows: number;
  readonly idSum: bigint;
  readonly ms: number;
}

function idSumOf(table: Table): bigint {
  let sum = 0n;
  for (const batch of table.batches) {
    for (const id of (batch.getChild('id')?.toArray() ?? []) as BigInt64Array) sum += id;
  }
  return sum;
}

async function timed(read: () => Promise<{ rows: number; idSum: bigint }>): Promise<Fetched> {
  const began = performance.now();
  const { rows, idSum } = await read();
  return { rows, idSum, ms: performance.now() - began };
}

const SIDES = ['baseline', 'flight', 'json', 'arrow'] as const;
type Side = (typeof SIDES)[number];

const LABELS: Readonly<Record<Side, string>> = {
  baseline: 'DuckDB node-api runAndReadAll() + getColumns()',
  flight: "Flight, Spice's JS SDK (client.sql)",
  json: 'HTTP JSON (POST /v1/sql, response.json())',
  arrow: 'HTTP Arrow IPC stream (POST /v1/sql, tableFromIPC)',
};

/** Arrow first: its bytes per row size the other protocols' windows. */
const SLOW_PROTOCOLS: readonly SlowProtocol[] = ['arrow', 'flight', 'json', 'jsonl', 'csv', 'sql-v1'];

/** Batches the query pool may have sent ahead of the consumer (the runtime's STREAM_WINDOW). */
const RUNTIME_WINDOW_BATCHES = 2;
/** Rows per batch: Flight's source asks for 8 192; HTTP Arrow takes the pool's default. */
const BATCH_ROWS: Readonly<Record<SlowProtocol, number>> = {
  flight: 8_192,
  arrow: 65_536,
  json: TEXT_BATCH_ROWS,
  jsonl: TEXT_BATCH_ROWS,
  csv: TEXT_BATCH_ROWS,
  'sql-v1': TEXT_BATCH_ROWS,
};

interface MemoryPeak {
  /**
   * Live memory of the runtime's thread (heap used + external, after a full GC) over its level
   * before the stream, at the instants the client held still (~150 ms into each hold, once the
   * server has filled what back-pressure lets it): what the server holds for a client that does not
   * read. The largest of them.
   */
  held: number;
  /** The median of those samples: the level a stream settles at (one sample is noisy). */
  heldMedian: number;
  /** The same sampled every 500 ms while the stream runs (reading or not): the largest. */
  live: number;
  /** Resident memory of the whole process (every thread, garbage not yet collected), over its level before. */
  rss: number;
}

/** The client holds still for HOLD_MS after every HOLD_EVERY_BYTES it reads. */
const HOLD_EVERY_BYTES = 16 * 2 ** 20;
const HOLD_MS = 300;

let collectGarbage: (() => void) | undefined;
function gc(): void {
  if (collectGarbage === undefined) {
    setFlagsFromString('--expose-gc');
    collectGarbage = runInNewContext('gc') as () => void;
  }
  collectGarbage();
}

function liveBytes(): number {
  gc();
  const usage = process.memoryUsage();
  return usage.heapUsed + usage.external;
}

/** Runs one slow client in a child process, sampling this process's memory meanwhile (see {@link MemoryPeak}). */
async function slowClient(
  request: SlowClientRequest,
): Promise<{ report: SlowClientReport; peak: MemoryPeak }> {
  // What the stream before released is freed after a GC and a turn of the loop: the level before this one.
  liveBytes();
  await new Promise((resolve) => setTimeout(resolve, 200));
  const liveBefore = liveBytes();
  const rssBefore = process.memoryUsage().rss;
  const peak: MemoryPeak = { held: 0, heldMedian: 0, live: 0, rss: 0 };
  const holds: number[] = [];
  const sample = (): number => {
    const live = liveBytes() - liveBefore;
    peak.live = Math.max(peak.live, live);
    peak.rss = Math.max(peak.rss, process.memoryUsage().rss - rssBefore);
    return live;
  };
  const child = fork(
    fileURLToPath(new URL('../slow-client.js', import.meta.url)),
    [JSON.stringify(request)],
    { stdio: ['ignore', 'ignore', 'inherit', 'ipc'] },
  );
  const timer = setInterval(sample, 500);
  return new Promise((resolve, reject) => {
    let report: SlowClientReport | undefined;
    child.on('message', (message: SlowClientReport | SlowClientHold) => {
      if ('held' in message) {
        setTimeout(() => {
          const held = Math.max(0, sample());
          holds.push(held);
          peak.held = Math.max(peak.held, held);
        }, HOLD_MS / 2);
      } else report = message;
    });
    child.once('exit', (code) => {
      clearInterval(timer);
      if (report === undefined || code !== 0) {
        reject(new Error(`the slow ${request.protocol} client exited with code ${code}`));
        return;
      }
      peak.heldMedian = holds.length === 0 ? 0 : median(holds);
      resolve({ report, peak });
    });
  });
}

/**
 * Memory that does not grow with the rows sent: ten times the rows settle at most at twice (+4 MiB)
 * the level a tenth as long a stream settles at (median of the held samples; memory that grew with
 * the rows would hold about ten times as much).
 */
const notGrowing = (peak: MemoryPeak, tenth: MemoryPeak): boolean =>
  peak.heldMedian <= 2 * tenth.heldMedian + 4 * 2 ** 20;

export const b6: Scenario = {
  id: 'b6',
  title: 'B6 columnar results',
  measures:
    "time to read SELECT id, name, amount (1 000 000 rows of BIGINT, VARCHAR, DOUBLE) end to end over Flight (Spice's JS SDK), HTTP JSON and HTTP Arrow; memory while streaming 10 000 000 rows to a slow client on every protocol",
  baseline:
    "DuckDB's node-api reading the same query on the same file into JS columns (runAndReadAll() + getColumns()), same rounds; for memory, the stream window",
  goal: 'Flight ≤ 1.0× node-api; Flight ≥ 5× faster than HTTP JSON; HTTP Arrow ≤ 1.2× Flight; memory bounded by the stream window on every protocol',
  async run(context) {
    const rows = context.quick ? 100_000 : GOAL_ROWS;
    const streamedRows = context.quick ? 1_000_000 : GOAL_STREAMED_ROWS;
    // Goals are stated for these sizes: a --quick run reports its figures, not judged.
    const at = { size: GOAL_ROWS, unit: 'rows', ran: rows };
    const rounds = context.quick ? 2 : 5;
    context.log(`building a ${rows}-row and a ${streamedRows}-row DuckDB file`);
    const file = await buildFile(context.workDir, 'duckdb', DATASET, rows, COLUMNS);
    const streamedFile = await buildFile(context.workDir, 'duckdb', STREAMED, streamedRows, COLUMNS);
    for (const built of [file, streamedFile]) {
      await context.aws.publish({
        dataset: built.dataset,
        location: locationOf(PREFIX),
        file: built.path,
        engine: 'duckdb',
      });
    }
    const { runtime, logger } = await startRuntime(
      context,
      spicepod({
        aws: context.aws.info,
        prefix: PREFIX,
        direct: true,
        datasets: [
          { name: DATASET, engine: 'duckdb', interval: '1h' },
          { name: STREAMED, engine: 'duckdb', interval: '1h' },
        ],
      }),
    );
    const totals: Record<Side, number[]> = { baseline: [], flight: [], json: [], arrow: [] };
    const memory: {
      protocol: SlowProtocol;
      peak: MemoryPeak;
      tenth: MemoryPeak;
      window: number;
      report: SlowClientReport;
    }[] = [];
    const notes: string[] = [];
    const direct = await DuckDBInstance.create(file.path, { access_mode: 'READ_ONLY' });
    const connection = await direct.connect();
    try {
      await runtime.ready(undefined, { timeoutMs: 300_000 });
      const flight = await startFlightServer(runtime, { port: 0 });
      const http = await startServer(runtime, { port: 0 });
      const spice = new SpiceClient({
        flightUrl: flight.address,
        flightOnly: true,
        httpUrl: http.url,
        logging: false,
      });
      const read: Record<Side, (sql: string) => Promise<{ rows: number; idSum: bigint }>> = {
        async baseline(sql) {
          const reader = await connection.runAndReadAll(sql);
          const [ids] = reader.getColumns() as [bigint[]];
          let idSum = 0n;
          for (const id of ids) idSum += id;
          return { rows: ids.length, idSum };
        },
        async flight(sql) {
          const table = await spice.sql(sql);
          return { rows: table.numRows, idSum: idSumOf(table) };
        },
        async json(sql) {
          const response = await fetch(`${http.url}/v1/sql`, {
            method: 'POST',
            headers: { 'content-type': 'text/plain' },
            body: sql,
          });
          if (response.status !== 200)
            throw new Error(`POST /v1/sql answered ${response.status}: ${await response.text()}`);
          const parsed = (await response.json()) as { id: number }[];
          let idSum = 0n;
          for (const row of parsed) idSum += BigInt(row.id);
          return { rows: parsed.length, idSum };
        },
        async arrow(sql) {
          const response = await fetch(`${http.url}/v1/sql`, {
            method: 'POST',
            headers: { 'content-type': 'text/plain', accept: ARROW },
            body: sql,
          });
          if (response.status !== 200)
            throw new Error(`POST /v1/sql answered ${response.status}: ${await response.text()}`);
          const table = tableFromIPC(new Uint8Array(await response.arrayBuffer()));
          return { rows: table.numRows, idSum: idSumOf(table) };
        },
      };
      try {
        // Warm every path (threads, first reads, JIT) on a small result.
        for (const side of SIDES) await read[side](`${SQL} LIMIT 1000`);
        const expectedSum = (BigInt(rows) * BigInt(rows - 1)) / 2n;
        for (let round = 0; round < rounds; round++) {
          const line: string[] = [];
          // Each round starts with a different side, so no side always follows the same one.
          for (let k = 0; k < SIDES.length; k++) {
            const side = SIDES[(round + k) % SIDES.length] as Side;
            const fetched = await timed(() => read[side](SQL));
            if (fetched.rows !== rows || fetched.idSum !== expectedSum) {
              throw new Error(
                `round ${round}: ${side} returned ${fetched.rows} rows (id sum ${fetched.idSum}); expected ${rows} (${expectedSum})`,
              );
            }
            totals[side].push(fetched.ms);
            line.push(`${side} ${fetched.ms.toFixed(0)} ms`);
          }
          context.log(`round ${round + 1}: ${line.join(', ')}`);
        }
        const streamedSql = `SELECT id, name, amount FROM ${STREAMED}`;
        let arrowBytesPerRow = 0;
        for (const protocol of SLOW_PROTOCOLS) {
          const request = {
            protocol,
            flight: flight.address,
            http: http.url,
            pauseEveryBytes: 4 * 2 ** 20,
            pauseMs: 20,
            holdEveryBytes: HOLD_EVERY_BYTES,
            holdMs: HOLD_MS,
          };
          // A tenth of the rows first: memory that is bounded holds as much for it as for all.
          const { peak: tenth } = await slowClient({
            ...request,
            sql: `${streamedSql} LIMIT ${streamedRows / 10}`,
            expectedRows: streamedRows / 10,
          });
          const { report, peak } = await slowClient({
            ...request,
            sql: streamedSql,
            expectedRows: streamedRows,
          });
          if (protocol === 'arrow') arrowBytesPerRow = report.bytes / report.rows;
          // The window: the batches the runtime holds (those sent ahead, the one being read, the one
          // being written) plus what the transport holds: Flight's write window, or one batch's
          // text being written while the next is built.
          const batchRows = BATCH_ROWS[protocol];
          const transport =
            protocol === 'flight'
              ? DEFAULT_WRITE_WINDOW_BYTES
              : protocol === 'arrow'
                ? batchRows * arrowBytesPerRow
                : 2 * batchRows * (report.bytes / report.rows);
          const window = (RUNTIME_WINDOW_BATCHES + 2) * batchRows * arrowBytesPerRow + transport;
          memory.push({ protocol, peak, tenth, window, report });
          context.log(
            `slow ${protocol}: ${report.rows} rows, ${formatValue(report.bytes / 2 ** 20, 'MiB')} in ${formatValue(report.ms / 1000, 's')}; held ${formatValue(peak.heldMedian / 2 ** 20, 'MiB')} (median; largest ${formatValue(peak.held / 2 ** 20, 'MiB')}) while the client did not read (a tenth of the rows: ${formatValue(tenth.heldMedian / 2 ** 20, 'MiB')}; window ${formatValue(window / 2 ** 20, 'MiB')}), at most ${formatValue(peak.live / 2 ** 20, 'MiB')} at any sample, RSS ${formatValue(peak.rss / 2 ** 20, 'MiB')}`,
          );
        }
      } finally {
        await flight.close();
        await http.close();
      }
    } finally {
      connection.closeSync();
      direct.closeSync();
      await runtime.close();
    }
    const p50 = Object.fromEntries(SIDES.map((side) => [side, median(totals[side])])) as Record<Side, number>;
    const group = `${rows.toLocaleString('en-US')} rows (BIGINT, VARCHAR, DOUBLE)`;
    const vsBaseline = ratio(p50.flight, p50.baseline);
    const vsJson = ratio(p50.json, p50.flight);
    const arrowVsFlight = ratio(p50.arrow, p50.flight);
    const measurements: Measurement[] = [
      {
        group,
        metric: `p50 time, ${LABELS.flight}`,
        unit: 'ms',
        value: p50.flight,
        baseline: p50.baseline,
        baselineLabel: LABELS.baseline,
        ratio: vsBaseline,
      },
      {
        group,
        metric: `p50 time, ${LABELS.json} (ratio: HTTP JSON / Flight)`,
        unit: 'ms',
        value: p50.json,
        baseline: p50.flight,
        baselineLabel: 'Flight',
        ratio: vsJson,
      },
      {
        group,
        metric: `p50 time, ${LABELS.arrow}`,
        unit: 'ms',
        value: p50.arrow,
        baseline: p50.flight,
        baselineLabel: 'Flight',
        ratio: arrowVsFlight,
      },
      { group, metric: `p50 time, ${LABELS.baseline}`, unit: 'ms', value: p50.baseline },
    ];
    const streamGroup = `${streamedRows.toLocaleString('en-US')} rows to a slow client`;
    for (const { protocol, peak, tenth, window, report } of memory) {
      measurements.push(
        {
          group: streamGroup,
          metric: `live memory held while the client does not read, ${protocol} (${formatValue(report.bytes / 2 ** 20, 'MiB')} sent)`,
          unit: 'MiB',
          value: peak.held / 2 ** 20,
          baseline: window / 2 ** 20,
          baselineLabel: 'stream window (model)',
          ratio: ratio(peak.held, window),
        },
        {
          group: streamGroup,
          metric: `median held while the client does not read, ${protocol} (ratio: all rows / a tenth of them)`,
          unit: 'MiB',
          value: peak.heldMedian / 2 ** 20,
          baseline: tenth.heldMedian / 2 ** 20,
          baselineLabel: 'a tenth of the rows',
          ratio: ratio(peak.heldMedian, tenth.heldMedian),
        },
        {
          group: streamGroup,
          metric: `live memory at any sample while streaming, ${protocol}`,
          unit: 'MiB',
          value: peak.live / 2 ** 20,
        },
        {
          group: streamGroup,
          metric: `process RSS growth while streaming, ${protocol}`,
          unit: 'MiB',
          value: peak.rss / 2 ** 20,
        },
      );
    }
    const bounded = memory.every(({ peak, tenth }) => notGrowing(peak, tenth));
    const goals: GoalCheck[] = [
      {
        goal: 'Flight (Spice JS SDK) ≤ 1.0× DuckDB node-api runAndReadAll() + getColumns()',
        measured: `${formatValue(p50.flight, 'ms')} vs ${formatValue(p50.baseline, 'ms')} = ${formatRatio(vsBaseline)}`,
        met: vsBaseline <= 1.0,
        at,
      },
      {
        goal: 'Flight ≥ 5× faster than HTTP JSON',
        measured: `${formatValue(p50.json, 'ms')} / ${formatValue(p50.flight, 'ms')} = ${formatRatio(vsJson)}`,
        met: vsJson >= 5,
        at,
      },
      {
        goal: 'HTTP Arrow IPC stream within 1.2× of Flight',
        measured: `${formatValue(p50.arrow, 'ms')} vs ${formatValue(p50.flight, 'ms')} = ${formatRatio(arrowVsFlight)}`,
        met: arrowVsFlight <= 1.2,
        at,
      },
      {
        goal: `memory while streaming ${streamedRows.toLocaleString('en-US')} rows to a slow client bounded by the stream window, every protocol`,
        measured: `${memory
          .map(
            ({ protocol, peak, tenth, window }) =>
              `${protocol} median ${formatValue(peak.heldMedian / 2 ** 20, 'MiB')} (a tenth of the rows ${formatValue(tenth.heldMedian / 2 ** 20, 'MiB')}; largest ${formatValue(peak.held / 2 ** 20, 'MiB')}; window ${formatValue(window / 2 ** 20, 'MiB')})`,
          )
          .join(', ')}; met when no stream settles above 2× (+4 MiB) what a tenth as long one settles at`,
        met: bounded,
        at: { size: GOAL_STREAMED_ROWS, unit: 'rows', ran: streamedRows },
      },
    ];
    notes.push(
      `Table ${DATASET}: ${rows.toLocaleString('en-US')} rows, DuckDB file ${formatValue(file.size / 2 ** 20, 'MiB')}; names 'customer-<id>' (most over DuckDB's 12 inline bytes). ${rounds} rounds after one warm-up read each; each round runs the four sides in a rotating order; medians reported.`,
      'All clients run in the scenario process (loopback), so the Flight and HTTP figures include both ends; the baseline is DuckDB in the same process, no network.',
      `Slow clients: a child process reading ${streamedRows.toLocaleString('en-US')} rows (${formatValue(streamedFile.size / 2 ** 20, 'MiB')} DuckDB file), pausing 20 ms after every 4 MiB and holding still for ${HOLD_MS} ms after every ${HOLD_EVERY_BYTES / 2 ** 20} MiB. Halfway into each hold (the server has filled what back-pressure allows) the runtime's thread is collected (full GC) and its live memory (heap used + external buffers) compared with its level before the stream: the memory held for a client that does not read. The same every 500 ms is reported as "at any sample", RSS (every thread, garbage included) beside it. Bounded means not growing with the rows sent: each protocol streams a tenth of the rows first (LIMIT), and the whole stream's median held memory must stay within 2× (+4 MiB) of that one's (memory that grew with the rows would hold about 10×). The window (model, reported): (STREAM_WINDOW 2 + 2) batches of Arrow (rows per batch × Arrow bytes per row measured by the Arrow client) plus the transport's buffer (Flight: the 1 MiB write window; HTTP text: two batches of text; HTTP Arrow: one batch).`,
    );
    if (logger.counts.error > 0)
      notes.push(`Runtime logged ${logger.counts.error} errors: ${logger.problems.join(' | ')}`);
    return {
      measurements,
      goals,
      notes,
      raw: { rows, rounds, totals, memory },
    };
  },
};
