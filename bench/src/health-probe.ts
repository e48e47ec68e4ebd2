/**
 * A health prober in a process of its own (B15), so the load's clients never delay its clock: every
 * `intervalMs` it opens a fresh connection (as a Kubernetes probe does) and asks `GET /health` and
 * `GET /v1/ready`, on a fixed schedule whatever the previous probes are doing (so a stalled server
 * is sampled all along, not once per stall). Each answer's latency goes into the histogram of the
 * phase the probe started in. Driven by lines on stdin: `phase <name>` starts a phase, `end` prints
 * one JSON line `{ "<phase> <path>": { summary, failed } }` and exits.
 * Usage: `node health-probe.js <base-url> <interval-ms>`.
 */
import { request } from 'node:http';
import { createInterface } from 'node:readline';
import { LatencyRecorder } from './histogram.js';

const PATHS = ['/health', '/v1/ready'] as const;
const PROBE_TIMEOUT_MS = 10_000;

const base = new URL(process.argv[2] ?? '');
const intervalMs = Number(process.argv[3] ?? 20);

interface Cell {
  readonly latency: LatencyRecorder;
  failed: number;
}

const cells = new Map<string, Cell>();
let phase: string | undefined;
const pending = new Set<Promise<void>>();

function cellOf(key: string): Cell {
  let cell = cells.get(key);
  if (cell === undefined) {
    cell = { latency: new LatencyRecorder(), failed: 0 };
    cells.set(key, cell);
  }
  return cell;
}

function probe(path: string, cell: Cell): Promise<void> {
  const began = performance.now();
  return new Promise((resolve) => {
    const req = request(
      { host: base.hostname, port: base.port, path, agent: false, timeout: PROBE_TIMEOUT_MS },
      (res) => {
        res.resume();
        res.on('end', () => {
          if (res.statusCode === 200) cell.latency.recordMs(performance.now() - began);
          else cell.failed++;
          resolve();
        });
      },
    );
    req.on('timeout', () => req.destroy(new Error('probe timed out')));
    req.on('error', () => {
      cell.failed++;
      resolve();
    });
    req.end();
  });
}

const timer = setInterval(() => {
  if (phase === undefined) return;
  for (const path of PATHS) {
    const running = probe(path, cellOf(`${phase} ${path}`));
    pending.add(running);
    void running.then(() => pending.delete(running));
  }
}, intervalMs);

createInterface({ input: process.stdin }).on('line', async (line) => {
  const [command, name] = line.trim().split(/\s+/);
  if (command === 'phase' && name !== undefined) phase = name;
  if (command !== 'end') return;
  clearInterval(timer);
  await Promise.all(pending);
  const out: Record<string, unknown> = {};
  for (const [key, cell] of cells) out[key] = { summary: cell.latency.summary(), failed: cell.failed };
  process.stdout.write(`${JSON.stringify(out)}\n`);
  process.exit(0);
});
