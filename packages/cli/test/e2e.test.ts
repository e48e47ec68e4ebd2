/**
 * End to end, as a user runs Ferry: `ferry serve` (a child process) over an empty file:// store,
 * `ferry publish` CSVs into it, and the server picks each snapshot up on its next poll — queried
 * over real HTTP, refused DML, /v1/ready 503 → 200, /metrics, `ferry status`, then SIGTERM → exit 0.
 */
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { spicepodYaml } from '@ferry/test-support';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parsePrometheus, sampleValue } from '../../server/test/prometheus-parser.js';
import { ferry, type Running, startFerry } from './helpers.js';

const DML_MESSAGE =
  "writes to accelerated table orders are not permitted when refresh_mode is 'snapshot'; the accelerator is driven exclusively from the snapshot store";

async function post(base: string, sql: string): Promise<{ status: number; body: unknown }> {
  const response = await fetch(`${base}/v1/sql`, {
    method: 'POST',
    headers: { 'content-type': 'text/plain' },
    body: sql,
  });
  return { status: response.status, body: await response.json() };
}

describe('ferry publish + ferry serve, end to end', () => {
  let dir: string;
  let storeDir: string;
  let location: string;
  let serve: Running;
  let base: string;

  const csv = async (name: string, rows: readonly string[]): Promise<string> => {
    const path = join(dir, name);
    await writeFile(path, ['id,customer,amount', ...rows, ''].join('\n'));
    return path;
  };

  const publish = (csvPath: string) =>
    ferry([
      'publish',
      '--location',
      location,
      '--dataset',
      'orders',
      '--engine',
      'duckdb',
      '--sql',
      `SELECT id, customer, CAST(amount AS DECIMAL(18,2)) AS amount FROM read_csv('${csvPath}')`,
    ]);

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'ferry-e2e-'));
    storeDir = join(dir, 'store');
    await mkdir(storeDir);
    location = pathToFileURL(`${storeDir}/`).href;
    const pod = join(dir, 'spicepod.yaml');
    await writeFile(
      pod,
      spicepodYaml({
        name: 'e2e',
        location,
        datasets: [{ name: 'orders', engine: 'duckdb', interval: '1s' }],
      }),
    );
    serve = startFerry([
      'serve',
      pod,
      '--http',
      '127.0.0.1:0',
      '--no-flight',
      '--data-dir',
      join(dir, 'data'),
    ]);
    const match = await serve.waitForStdout(/^Listening on (http:\/\/127\.0\.0\.1:\d+)$/m);
    base = match[1] as string;
  });

  afterAll(async () => {
    if (serve !== undefined && serve.child.exitCode === null) serve.child.kill('SIGKILL');
    await rm(dir, { recursive: true, force: true });
  });

  it('is not ready before the first snapshot', async () => {
    const ready = await fetch(`${base}/v1/ready`);
    expect(ready.status).toBe(503);
    expect(await ready.text()).toMatch(/^not ready: orders \(\w+\)$/);
    const query = await post(base, 'SELECT count(*) AS n FROM orders');
    expect(query.status).toBe(503);
    expect(query.body).toMatchObject({ code: 'ERR_DATASET_NOT_READY' });
  });

  it('serves the first published snapshot', async () => {
    const first = await publish(await csv('v1.csv', ['1,ann,10.50', '2,bob,20.25', '3,cy,5.00']));
    expect(first.stderr).not.toContain('error');
    expect(first.code).toBe(0);
    expect(first.stdout).toContain('snapshot-id: 0');
    expect(first.stdout).toMatch(
      /key: +month=\d{4}-\d{2}\/day=\d{4}-\d{2}-\d{2}\/dataset=orders\/orders_\d{8}T\d{6}Z\.duckdb/,
    );
    expect(first.stdout).toMatch(/checksum: +sha256:[0-9a-f]{64}/);
    expect(first.stdout).toMatch(/size: +\d+ bytes/);

    await expect
      .poll(async () => (await fetch(`${base}/v1/ready`)).status, { timeout: 30_000, interval: 200 })
      .toBe(200);
    expect(await post(base, 'SELECT count(*) AS n, sum(amount) AS total FROM orders')).toEqual({
      status: 200,
      body: [{ n: 3, total: '35.75' }],
    });
  });

  it('picks up a newer snapshot on the next poll', async () => {
    const second = await publish(
      await csv('v2.csv', ['1,ann,10.50', '2,bob,20.25', '3,cy,5.00', '4,dee,100.00']),
    );
    expect(second.code).toBe(0);
    expect(second.stdout).toContain('snapshot-id: 1');
    await expect
      .poll(async () => (await post(base, 'SELECT count(*) AS n FROM orders')).body, {
        timeout: 30_000,
        interval: 200,
      })
      .toEqual([{ n: 4 }]);
    expect((await post(base, 'SELECT customer FROM orders WHERE id = 4')).body).toEqual([
      { customer: 'dee' },
    ]);
  });

  it('refuses DML with the Spice message as a JSON error', async () => {
    const refused = await post(base, 'DELETE FROM orders WHERE id = 1');
    expect(refused.status).toBe(400);
    expect(refused.body).toEqual({
      error: DML_MESSAGE.replace('writes to', 'deletes on'),
      code: 'ERR_WRITE_REJECTED',
    });
    const insert = await post(base, "INSERT INTO orders VALUES (9, 'x', 1)");
    expect(insert).toEqual({ status: 400, body: { error: DML_MESSAGE, code: 'ERR_WRITE_REJECTED' } });
  });

  it('exposes parseable metrics with the loaded snapshot and swaps', async () => {
    const response = await fetch(`${base}/metrics`);
    expect(response.status).toBe(200);
    const families = await parsePrometheus(await response.text());
    expect(sampleValue(families, 'ferry_dataset_snapshot_id', { dataset: 'orders' })).toBe(1);
    expect(sampleValue(families, 'ferry_dataset_swaps_total', { dataset: 'orders' })).toBe(2);
    expect(
      sampleValue(families, 'ferry_dataset_polls_total', { dataset: 'orders', result: 'newer' }),
    ).toBeGreaterThanOrEqual(1);
    expect(
      sampleValue(families, 'ferry_query_duration_seconds_count', { outcome: 'ok' }),
    ).toBeGreaterThanOrEqual(3);
  });

  it('shows the dataset in ferry status', async () => {
    const status = await ferry(['status', '--http', base.replace('http://', '')]);
    expect(status.code).toBe(0);
    const [header, row] = status.stdout.trimEnd().split('\n');
    expect(header).toMatch(/^DATASET +ENGINE +STATE +SNAPSHOT +SNAPSHOT TIME +LAST POLL +RESULT +ERROR$/);
    expect(row).toMatch(/^orders +duckdb +(serving|polling|swapping) +1 +\d{4}-\d{2}-\d{2}T/);
  });

  it('shuts down cleanly on SIGTERM with exit code 0 and JSON log lines', async () => {
    serve.child.kill('SIGTERM');
    const finished = await serve.exited;
    expect(finished.signal).toBeNull();
    expect(finished.code).toBe(0);
    const lines = finished.stderr.trimEnd().split('\n');
    const records = lines.map((line) => JSON.parse(line) as { level: string; msg: string; time: string });
    expect(records.every((record) => typeof record.time === 'string' && typeof record.msg === 'string')).toBe(
      true,
    );
    expect(records.map((record) => record.msg)).toContain(
      'Received SIGTERM; closing the HTTP server, then the runtime',
    );
    expect(records.at(-1)?.msg).toBe('Stopped');
    await expect(fetch(`${base}/health`)).rejects.toThrow();
  });
});
