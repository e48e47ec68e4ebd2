/**
 * The pure pieces under the server, each against apache-arrow's own reading of what they build:
 * record batches sliced under gRPC's message limit, bound parameters back to the runtime's values,
 * LIKE patterns, path scrubbing.
 */
import {
  type RecordBatch,
  type Schema,
  Table,
  tableFromArrays,
  tableFromIPC,
  tableToIPC,
  Utf8,
  vectorFromArray,
} from 'apache-arrow';
import { describe, expect, it } from 'vitest';
import { likePattern, selectTables } from '../src/catalog.js';
import { publicMessage } from '../src/errors.js';
import { batchMessages, readFlightData, schemaMessage } from '../src/ipc.js';
import { parametersOf, placeholderCount } from '../src/parameters.js';
import { slicesOf } from '../src/result-source.js';

describe('record batches', () => {
  it('a batch over the byte budget is sent in slices that hold every row once, in order', () => {
    const labels = Array.from({ length: 1_000 }, (_, index) => `row-${index}-${'x'.repeat(1_000)}`);
    const table = new Table({
      id: vectorFromArray(Int32Array.from(labels, (_, index) => index)),
      label: vectorFromArray(labels, new Utf8()),
    });
    const batch = table.batches[0] as RecordBatch;
    const slices = [...slicesOf(batch, 100_000)];
    expect(slices.length).toBeGreaterThan(9);
    const ids = slices.flatMap((slice) => [...(slice.getChild('id')?.toArray() ?? [])]);
    expect(ids).toEqual(labels.map((_, index) => index));
    // Each slice reads back through Arrow IPC as its own rows (offsets of the text column rebased).
    const labelsBack = slices.flatMap((slice) => [
      ...(tableFromIPC(tableToIPC(new Table([slice])))
        .getChild('label')
        ?.toArray() ?? []),
    ]);
    expect(labelsBack).toEqual(labels);
    // What goes on the wire is the slice only, not the whole batch's buffers.
    for (const slice of slices) {
      const bytes = batchMessages(slice).reduce((sum, message) => sum + message.dataBody.byteLength, 0);
      expect(bytes).toBeLessThan(120_000);
    }
    expect([...slicesOf(batch, 10 * 1024 * 1024)]).toEqual([batch]);
  });
});

describe('parameters bound with DoPut', () => {
  it('become the runtime’s JSON-safe values, $n columns by number', () => {
    const values = tableFromArrays({ $2: ['text'], $1: [1.5] });
    const batches = readFlightData(
      [values.schema, ...values.batches].flatMap((part, index) =>
        index === 0 ? [schemaMessage(part as Schema)] : batchMessages(part as RecordBatch),
      ),
    );
    expect(parametersOf(batches)).toEqual([1.5, 'text']);
    expect(placeholderCount('SELECT * FROM t WHERE a = $2 AND b = $1')).toBe(2);
    expect(placeholderCount("SELECT '?' FROM t WHERE a = ? AND b = ?")).toBe(2);
    expect(placeholderCount("SELECT '$c' FROM t WHERE a = $a AND b = $b AND c = $a")).toBe(2);
  });
});

describe('helpers', () => {
  it('LIKE patterns: % any run, _ one character, backslash escapes', () => {
    expect(['orders', 'order_lines', 'users'].filter(likePattern('order%'))).toEqual([
      'orders',
      'order_lines',
    ]);
    expect(['order_lines', 'orderXlines'].filter(likePattern('order\\_lines'))).toEqual(['order_lines']);
    expect(['ab', 'abc'].filter(likePattern('a_'))).toEqual(['ab']);
  });

  it('GetTables lists by schema then name in binary order, as FlightSql.proto asks and Spice sorts them (not by locale)', () => {
    const table = (schema: string, name: string) => ({ schema, name, type: 'TABLE' as const });
    const listed = selectTables({ tableTypes: [], includeSchema: false }, [
      table('public', 'orders'),
      table('public', 'Users'),
      table('runtime', 'task_history'),
      table('public', 'b_table'),
      table('public', 'B'),
      table('Public', 'zeta'),
    ]);
    expect(listed.map((entry) => `${entry.schema}.${entry.name}`)).toEqual([
      'Public.zeta',
      'public.B',
      'public.Users',
      'public.b_table',
      'public.orders',
      'runtime.task_history',
    ]);
  });

  it('publicMessage never lets a local path through', () => {
    expect(publicMessage("Query on '/var/lib/ferry/data/orders/7.duckdb' failed: Binder Error: x")).toBe(
      "Query on '<snapshot file>' failed: Binder Error: x",
    );
    expect(publicMessage('IO Error: Cannot open file /tmp/ferry-x/data/a.sqlite: denied')).toBe(
      'IO Error: Cannot open file <snapshot file>: denied',
    );
    expect(publicMessage('SELECT a / b FROM t')).toBe('SELECT a / b FROM t');
    expect(publicMessage('Query failed: can\'t open "file:///srv/ferry/x.db"; see C:\\ferry\\x.db')).toBe(
      "Query failed: can't open '<snapshot file>'; see <snapshot file>",
    );
    // Slashes inside a word are no path: dates, divisions, LIKE patterns stay as the engine wrote them.
    for (const text of ['value out of range: "2026/13/01"', 'SELECT nope/2/3 FROM t', "LIKE '%/a/%'"]) {
      expect(publicMessage(text)).toBe(text);
    }
  });
});
