/**
 * Crash safety of the serving process. A child process runs the runtime (built dist, real threads)
 * on a file:// store whose snapshots were published once up front (a chain made by the incremental
 * writer, with block manifests, so every swap is a delta swap that copies the live file's blocks); the test makes a newer snapshot
 * current by rewriting metadata.json, then kills the child with SIGKILL at a random instant drawn
 * from twice a measured swap's duration (so before, during or after the download, validation,
 * rename or manifest promotion). On every restart the
 * store is made unreachable first, so whatever the child serves comes from its live file alone:
 * the live file must be byte-identical to a published snapshot, the one the child names in its log
 * ("serves snapshot N from its live file"), it must be the old or the new snapshot (the new one if
 * its swap was reported before the kill), queries must answer from it at once, and no temporary
 * file may be left. The dataset holds four snapshots for pinned reads (`ferry_retain_snapshots`),
 * so the kills land among the links of held snapshots too; none is ever served after a restart in
 * place of the live file. 100 kills over two lanes run side by side; the random kill instants are seeded
 * and printed (`FERRY_CRASH_SEED=<n>` replays a run; `FERRY_CRASH_KILLS` / `FERRY_CRASH_LANES`
 * resize it).
 */
import { type ChildProcess, fork } from 'node:child_process';
import { createHash } from 'node:crypto';
import { copyFile, mkdir, readdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { appendSnapshot, getDataset, parseMetadata, recordedSchema } from '@ferry/core';
import { createFileStore } from '@ferry/store';
import { type BuiltSnapshot, publishIncremental, publishSnapshot } from '@ferry/writer';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { tempDir } from './support.js';

const CHILD = fileURLToPath(new URL('./crash/serve-child.mjs', import.meta.url));
const DATASET = 'orders';
const KILLS = Number(process.env.FERRY_CRASH_KILLS ?? 100);
const LANES = Number(process.env.FERRY_CRASH_LANES ?? 2);
const FILES = 6;
const ROWS = 60_000;
const SEED = Number(process.env.FERRY_CRASH_SEED ?? Math.floor(Math.random() * 2 ** 31));
const RESTORED = new RegExp(`^Dataset '${DATASET}' serves snapshot (\\d+) from its live file`);

/** mulberry32: a small seeded generator, so a failing run can be replayed. */
function seeded(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
  };
}

function sha256(bytes: Uint8Array): string {
  return createHash('sha256').update(bytes).digest('hex');
}

interface Snapshot extends BuiltSnapshot {
  readonly version: number;
  readonly checksum: string;
  /** Its block manifest (copied beside it into each lane's store). */
  readonly sidecar: string;
}

/** The dataset's recorded schema in a store's metadata.json. */
async function datasetOf(
  store: ReturnType<typeof createFileStore>,
): Promise<{ schema: BuiltSnapshot['schema'] }> {
  const got = await store.get('metadata.json');
  if (got.status !== 'ok') throw new Error('no metadata.json');
  const dataset = getDataset(parseMetadata(new TextDecoder().decode(got.body), store.location), DATASET);
  if (dataset === undefined) throw new Error(`no dataset ${DATASET}`);
  return { schema: recordedSchema(dataset).schema };
}

interface ChildMessage {
  readonly type: 'started' | 'log' | 'swap' | 'result';
  readonly message?: string;
  readonly to?: number;
  readonly id?: number;
  readonly rows?: unknown[];
  readonly snapshotId?: number | null;
  readonly error?: { readonly code?: string; readonly message: string };
}

/** Every child still running, so a failing test leaves none behind. */
const running = new Set<Child>();

/** One serving process and what it has reported. */
class Child {
  readonly process: ChildProcess;
  readonly logs: string[] = [];
  readonly swaps: number[] = [];
  readonly exited: Promise<void>;
  readonly #waiters = new Set<() => void>();
  readonly #results = new Map<number, (message: ChildMessage) => void>();
  #stderr = '';
  #queries = 0;

  constructor(spicepod: string, dataDir: string) {
    this.process = fork(CHILD, [spicepod, dataDir], {
      execArgv: [],
      stdio: ['ignore', 'ignore', 'pipe', 'ipc'],
      env: { ...process.env, AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true' },
    });
    this.process.stderr?.on('data', (chunk: Buffer) => {
      this.#stderr += chunk.toString();
    });
    this.process.on('message', (message: ChildMessage) => {
      if (message.type === 'log' && message.message !== undefined) this.logs.push(message.message);
      if (message.type === 'swap' && message.to !== undefined) this.swaps.push(message.to);
      if (message.type === 'result' && message.id !== undefined) this.#results.get(message.id)?.(message);
      for (const waiter of [...this.#waiters]) waiter();
    });
    this.exited = new Promise((resolve) =>
      this.process.once('exit', () => {
        running.delete(this);
        resolve();
      }),
    );
    running.add(this);
  }

  /** Resolves with the id of the first swap to `to` or later. */
  waitForSwap(to: number, timeoutMs = 60_000): Promise<void> {
    return new Promise((resolve, reject) => {
      const check = (): void => {
        if (!this.swaps.some((id) => id >= to)) return;
        clearTimeout(timer);
        this.#waiters.delete(check);
        resolve();
      };
      const timer = setTimeout(() => {
        this.#waiters.delete(check);
        reject(new Error(`no swap to ${to} within ${timeoutMs} ms; log: ${this.logs.join(' | ')}`));
      }, timeoutMs);
      this.#waiters.add(check);
      check();
    });
  }

  /** Resolves with the first log line matching `pattern`; rejects if the child dies first. */
  waitForLog(pattern: RegExp, timeoutMs = 60_000): Promise<RegExpExecArray> {
    return new Promise((resolve, reject) => {
      const check = (): void => {
        for (const line of this.logs) {
          const match = pattern.exec(line);
          if (match !== null) {
            done();
            resolve(match);
            return;
          }
        }
      };
      const fail = (why: string) => () => {
        done();
        reject(new Error(`${why}; log: ${this.logs.join(' | ')}; stderr: ${this.#stderr}`));
      };
      const onExit = fail('the child exited before logging it');
      const timer = setTimeout(fail(`no log line matched ${pattern} within ${timeoutMs} ms`), timeoutMs);
      const done = (): void => {
        clearTimeout(timer);
        this.#waiters.delete(check);
        this.process.off('exit', onExit);
      };
      this.process.once('exit', onExit);
      this.#waiters.add(check);
      check();
    });
  }

  query(sql: string): Promise<ChildMessage> {
    const id = ++this.#queries;
    return new Promise((resolve) => {
      this.#results.set(id, resolve);
      this.process.send({ type: 'query', id, sql });
    });
  }

  pollNow(): void {
    this.process.send({ type: 'poll', dataset: DATASET });
  }

  async kill(): Promise<void> {
    this.process.kill('SIGKILL');
    await this.exited;
  }
}

/** One store, data directory and serving process, killed and restarted `kills` times. */
class Lane {
  readonly #dir: string;
  readonly #snapshots: readonly Snapshot[];
  readonly #random: () => number;
  readonly storeDir: string;
  readonly offlineDir: string;
  readonly dataDir: string;
  readonly spicepod: string;
  /** Entry id → the snapshot file it records (ids grow; files are reused round-robin). */
  readonly #fileOf = new Map<number, Snapshot>();
  #document: Record<string, unknown> | undefined;
  #current = -1;
  /** Ids the live file may hold at the next restart. */
  #possible: number[] = [];
  #served = 0;
  #killWindowMs = 300;
  readonly stats = { kills: 0, swapsReported: 0, restartedOnNewer: 0, restartedOnOlder: 0 };

  constructor(dir: string, snapshots: readonly Snapshot[], random: () => number) {
    this.#dir = dir;
    this.#snapshots = snapshots;
    this.#random = random;
    this.storeDir = join(dir, 'store');
    this.offlineDir = join(dir, 'store-offline');
    this.dataDir = join(dir, 'data');
    this.spicepod = join(dir, 'spicepod.yaml');
  }

  get location(): string {
    return `file://${this.storeDir}/`;
  }

  async init(): Promise<void> {
    await mkdir(join(this.storeDir, 'snapshots'), { recursive: true });
    for (const [index, snapshot] of this.#snapshots.entries()) {
      await copyFile(snapshot.path, join(this.storeDir, 'snapshots', `${DATASET}_${index}.duckdb`));
      await copyFile(
        snapshot.sidecar,
        join(this.storeDir, 'snapshots', `${DATASET}_${index}.duckdb.ferry-blocks.json`),
      );
    }
    await writeFile(
      this.spicepod,
      [
        'version: v1',
        'kind: Spicepod',
        'name: crash',
        'snapshots:',
        `  location: ${this.location}`,
        'datasets:',
        `  - from: postgres:public.${DATASET}`,
        `    name: ${DATASET}`,
        '    acceleration:',
        '      engine: duckdb',
        '      mode: file',
        '      refresh_mode: snapshot',
        '      refresh_check_interval: 100ms',
        '      snapshots: enabled',
        // Earlier snapshots held for pinned reads: links made and pruned at every swap, killed too.
        '      params:',
        '        ferry_retain_snapshots: 4',
        '',
      ].join('\n'),
    );
    await this.advance();
  }

  /**
   * Appends an entry for the next snapshot id and makes it current (an atomic rewrite), in the
   * store where it is now (`offline`: moved away while a restart is checked).
   */
  async advance(offline = false): Promise<void> {
    const id = this.#current + 1;
    const index = id % this.#snapshots.length;
    const snapshot = this.#snapshots[index] as Snapshot;
    this.#document = appendSnapshot(this.#document, {
      location: this.location,
      dataset: DATASET,
      engine: 'duckdb',
      schema: snapshot.schema,
      uri: `${this.location}snapshots/${DATASET}_${index}.duckdb`,
      checksum: snapshot.checksum,
      size: snapshot.size,
      rowCount: snapshot.rowCount,
      timestampMs: Date.now(),
    });
    this.#fileOf.set(id, snapshot);
    const store = createFileStore({ location: `file://${offline ? this.offlineDir : this.storeDir}/` });
    try {
      await store.put('metadata.json', new TextEncoder().encode(JSON.stringify(this.#document)));
    } finally {
      await store.close();
    }
    this.#current = id;
  }

  /**
   * First start, store reachable: bootstrap snapshot 0, then time one swap (to 1) to size the
   * window the kill instants are drawn from, and stop.
   */
  async bootstrap(): Promise<void> {
    const child = new Child(this.spicepod, this.dataDir);
    try {
      await child.waitForSwap(0);
      await this.advance();
      const started = performance.now();
      child.pollNow();
      await child.waitForSwap(this.#current);
      // The swaps of this loop are delta swaps: the live file's blocks are reused.
      await child.waitForLog(new RegExp(`now serves snapshot ${this.#current} \\(.* reused from snapshot`));
      // Kills land before, during and after a swap: from 0 to twice its duration (at least 200 ms).
      this.#killWindowMs = Math.max(200, 2 * (performance.now() - started));
    } finally {
      await child.kill();
    }
    this.#possible = [this.#current];
  }

  /**
   * Restart with the store unreachable and check what the previous kill left: returns the running
   * child, which serves from its live file alone. The store stays away until `swapAndKill`.
   */
  async restartAndCheck(kill: number): Promise<Child> {
    const context = `seed ${SEED}, ${this.#dir}, after kill ${kill}`;
    await rename(this.storeDir, this.offlineDir);
    const child = new Child(this.spicepod, this.dataDir);
    try {
      const restored = await child.waitForLog(RESTORED);
      const served = Number(restored[1]);
      expect(this.#possible, `${context}: restarted on snapshot ${served}`).toContain(served);
      const snapshot = this.#fileOf.get(served);
      const live = await readFile(join(this.dataDir, `${DATASET}.duckdb`));
      expect(sha256(live), `${context}: live file of snapshot ${served}`).toBe(snapshot?.checksum);
      const answer = await child.query(
        `SELECT min(version) AS lo, max(version) AS hi, count(*) AS n FROM ${DATASET}`,
      );
      expect(answer.error, `${context}: query after restart`).toBeUndefined();
      expect(answer.snapshotId, context).toBe(served);
      expect(answer.rows, context).toEqual([{ lo: snapshot?.version, hi: snapshot?.version, n: ROWS }]);
      // Links of held snapshots left by the killed process are gone: only the live file's is left.
      const links = await readdir(join(this.dataDir, '.generations', DATASET));
      expect(
        links.filter((name) => !name.startsWith(`${served}-`)),
        `${context}: generation links after restart`,
      ).toEqual([]);
      const leftovers = (await readdir(this.dataDir)).filter((name) => name.includes('.ferry-tmp-'));
      expect(leftovers, `${context}: temporary files after restart`).toEqual([]);
      if (served === this.#current) this.stats.restartedOnNewer++;
      else this.stats.restartedOnOlder++;
      this.#served = served;
      return child;
    } catch (error) {
      await child.kill();
      await rename(this.offlineDir, this.storeDir);
      throw error;
    }
  }

  /**
   * Brings the store back with a newer current snapshot (so the child can only load that one) and
   * kills the child at a random instant.
   */
  async swapAndKill(child: Child): Promise<void> {
    await this.advance(true);
    await rename(this.offlineDir, this.storeDir);
    child.pollNow();
    const delay = Math.floor(this.#random() * this.#killWindowMs);
    // The kill instant is the point of the test: a timer, not a wait for an event.
    await new Promise((resolve) => setTimeout(resolve, delay));
    await child.kill();
    this.stats.kills++;
    const swapped = child.swaps.includes(this.#current);
    if (swapped) this.stats.swapsReported++;
    // A reported swap is durable: the restart must serve it. Otherwise the old or the new one.
    this.#possible = swapped ? [this.#current] : [this.#served, this.#current];
  }
}

let snapshots: Snapshot[] = [];
/** Directories this file created, removed at the end. */
const dirs: string[] = [];

beforeAll(async () => {
  const dir = await tempDir('ferry-crash-build-');
  dirs.push(dir);
  snapshots = [];
  // A chain made by the incremental writer (each version rewrites the version column of the one
  // before), published with block manifests: every swap of the loop is a delta swap.
  const build = createFileStore({ location: `file://${join(dir, 'store')}/` });
  try {
    let published = await publishSnapshot({
      dataset: DATASET,
      engine: 'duckdb',
      location: build,
      notNull: ['id'],
      source: {
        sql: `SELECT i::BIGINT AS id, 1::BIGINT AS version, md5(i::VARCHAR) AS pad FROM range(${ROWS}) t(i)`,
      },
    });
    for (let version = 1; version <= FILES; version++) {
      if (version > 1) {
        published = await publishIncremental({
          dataset: DATASET,
          location: build,
          stateDir: join(dir, 'writer'),
          statements: [`UPDATE ${DATASET} SET version = ${version}`],
        });
      }
      const path = join(dir, 'store', ...published.key.split('/'));
      const sidecar = `${path}.ferry-blocks.json`;
      const engine = await readFile(path);
      snapshots.push({
        path,
        sidecar,
        dataset: DATASET,
        engine: 'duckdb',
        schema: (await datasetOf(build)).schema,
        rowCount: ROWS,
        size: engine.byteLength,
        version,
        checksum: sha256(engine),
      });
    }
  } finally {
    await build.close();
  }
}, 120_000);

afterAll(async () => {
  await Promise.all([...running].map((child) => child.kill()));
  await Promise.all(dirs.map((dir) => rm(dir, { recursive: true, force: true })));
});

describe('crash safety: SIGKILL of the serving process at random instants', () => {
  it(`${KILLS} kills during swaps: every restart serves a published snapshot from its live file at once`, async () => {
    console.log(`crash-safety seed: ${SEED} (replay with FERRY_CRASH_SEED=${SEED})`);
    const lanes = await Promise.all(
      Array.from({ length: LANES }, async (_, index) => {
        const dir = await tempDir(`ferry-crash-${index}-`);
        dirs.push(dir);
        const lane = new Lane(dir, snapshots, seeded(SEED + index));
        await lane.init();
        return lane;
      }),
    );
    let failed = false;
    const outcomes = await Promise.allSettled(
      lanes.map(async (lane, index) => {
        try {
          await lane.bootstrap();
          const kills = Math.floor(KILLS / LANES) + (index < KILLS % LANES ? 1 : 0);
          for (let kill = 1; kill <= kills && !failed; kill++) {
            await lane.swapAndKill(await lane.restartAndCheck(kill - 1));
          }
          // The last kill is checked by one more restart.
          if (!failed) {
            await (await lane.restartAndCheck(kills)).kill();
            await rename(lane.offlineDir, lane.storeDir);
          }
        } catch (error) {
          failed = true;
          throw error;
        }
      }),
    );
    for (const outcome of outcomes) if (outcome.status === 'rejected') throw outcome.reason;
    const total = lanes.reduce(
      (sum, lane) => ({
        kills: sum.kills + lane.stats.kills,
        swapsReported: sum.swapsReported + lane.stats.swapsReported,
        restartedOnNewer: sum.restartedOnNewer + lane.stats.restartedOnNewer,
        restartedOnOlder: sum.restartedOnOlder + lane.stats.restartedOnOlder,
      }),
      { kills: 0, swapsReported: 0, restartedOnNewer: 0, restartedOnOlder: 0 },
    );
    console.log(`crash-safety: ${JSON.stringify(total)}`);
    expect(total.kills).toBeGreaterThanOrEqual(KILLS);
    // The kill instants must have landed on both sides of the swap for the test to mean anything.
    expect(total.restartedOnNewer).toBeGreaterThan(0);
    expect(total.restartedOnOlder).toBeGreaterThan(0);
  }, 600_000);
});
