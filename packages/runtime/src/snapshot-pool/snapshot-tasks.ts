/**
 * The snapshot tasks themselves, each a function of plain data (`SnapshotTask` in, its result out),
 * run by a worker of the snapshot pool (`thread.ts`) or, in tests, in-process. A swap is
 * one task (`load`: download, verify, commit, link), reporting its progress on its port. The S3
 * SDK and the engines load here, once per pool worker, never in a dataset thread. A worker keeps
 * what is worth keeping between tasks: one store per (location, credentials) and warm file checkers
 * per directory (`SnapshotCheckers`).
 */
import { dirname } from 'node:path';
import { performance } from 'node:perf_hooks';
import type { MessagePort } from 'node:worker_threads';
import {
  fileFormatOf,
  normalizeLocation,
  type ObjectStore,
  parseSnapshotStatement,
  resolveSnapshotKey,
  retentionOf,
  type SignedEnvelope,
} from '@ferry/core/base';
import {
  authenticateSnapshot,
  checkLiveFile,
  commitSnapshot,
  discardPrepared,
  downloadSnapshot,
  GENERATIONS_KEPT,
  linkGeneration,
  liveSignatureProblem,
  pruneGenerations,
  pruneRetained,
  readHeartbeat,
  removeTemporaries,
  restoreLocal,
  SnapshotCheckers,
  type SnapshotFilesOptions,
  verifySnapshot,
} from '@ferry/snapshots';
import { TrustedKeySet } from '@ferry/store/signing';
import type {
  DatasetFiles,
  LoadProgress,
  LoadResult,
  RestoreResult,
  SnapshotTask,
  SnapshotTaskResults,
} from '../common/protocol.js';
import { storeFor, storeKey } from '../common/stores.js';

/** Why a task stopped when its dataset asked it to, or went away. */
export const TASK_ABORTED = 'The dataset stopped before the snapshot task ended.';

/** `map`'s value of `key`, made (and kept) the first time. */
function kept<V>(map: Map<string, V>, key: string, make: () => V): V {
  let value = map.get(key);
  if (value === undefined) {
    value = make();
    map.set(key, value);
  }
  return value;
}

/** What one thread keeps between tasks. */
export class SnapshotTaskRunner {
  readonly #stores = new Map<string, ObjectStore>();
  /**
   * The trusted key sets, parsed once per list: every signature check of a dataset reuses the
   * `KeyObject`s of its `ferry_trusted_keys` instead of parsing PEM per swap.
   */
  readonly #keySets = new Map<string, TrustedKeySet>();
  readonly #checkers = new SnapshotCheckers();

  run<K extends SnapshotTask['kind']>(
    task: Extract<SnapshotTask, { kind: K }>,
  ): Promise<SnapshotTaskResults[K]>;
  run(task: SnapshotTask): Promise<SnapshotTaskResults[SnapshotTask['kind']]>;
  async run(task: SnapshotTask): Promise<SnapshotTaskResults[SnapshotTask['kind']]> {
    switch (task.kind) {
      case 'restore':
        return this.#restore(task.files, task.trustedKeys);
      case 'load':
        return withAbort(task.port, (signal) => this.#load(task, signal));
      case 'authenticate':
        return this.#authenticate(task);
      case 'heartbeat':
        return readHeartbeat(this.#storeOf(task.files), task.files.dataset, this.#trusted(task.trustedKeys));
      case 'prune':
        if (task.retention === null) {
          // The start of a dataset whose engine is not known yet (no restore): what an earlier run
          // left goes, as a restore removes it, its temporary files included.
          await removeTemporaries(task.files.livePath);
          await pruneGenerations(task.files.generationDir, 0);
        } else await pruneRetained(task.files.generationDir, retentionOf(task.retention), GENERATIONS_KEPT);
        return null;
      case 'release':
        await this.close();
        return null;
    }
  }

  /** Closes the warm checkers and the stores. */
  async close(): Promise<void> {
    await this.#checkers.close();
    const stores = [...this.#stores.values()];
    this.#stores.clear();
    await Promise.all(stores.map((store) => store.close()));
  }

  #options(files: DatasetFiles): SnapshotFilesOptions {
    return {
      dataset: files.dataset,
      engine: fileFormatOf(files.engine),
      // Spice writers name the table inside the file after the dataset.
      table: files.dataset,
      livePath: files.livePath,
      location: files.location,
      store: this.#storeOf(files),
    };
  }

  #storeOf(files: DatasetFiles): ObjectStore {
    return kept(this.#stores, storeKey(files), () => storeFor(files));
  }

  #trusted(pems: readonly string[]): TrustedKeySet {
    return kept(this.#keySets, pems.join('\n'), () => new TrustedKeySet(pems));
  }

  async #restore(files: DatasetFiles, trustedKeys: readonly string[] | undefined): Promise<RestoreResult> {
    // Links of an earlier run are stale (the pools that held them are gone with it).
    await pruneGenerations(files.generationDir, 0);
    const options = this.#options(files);
    const local = await restoreLocal(options);
    if (local === null) return { kind: 'none' };
    if (
      local.location !== undefined &&
      normalizeLocation(local.location) !== normalizeLocation(files.location)
    ) {
      // Another store's snapshot ids are no guide to this one's (a new store numbers from 0 again).
      const error = `was loaded from ${local.location}, not the dataset's location ${files.location}`;
      return { kind: 'refused', snapshotId: local.snapshotId, error };
    }
    if (trustedKeys !== undefined) {
      // Checked against the keys trusted now, not those of the run that downloaded it.
      const problem = liveSignatureProblem(local, files.dataset, this.#trusted(trustedKeys));
      if (problem !== undefined) return { kind: 'refused', snapshotId: local.snapshotId, error: problem };
    }
    try {
      // The file matches its manifest; reading it proves the engine reads it, with the table and schema.
      await this.#checkers.use(files.engine, dirname(files.livePath), (checker) =>
        checkLiveFile(options, local.schema, { checker }),
      );
    } catch (error) {
      return { kind: 'unreadable', error: (error as Error).message };
    }
    const generation = await linkGeneration(files.livePath, files.generationDir, local.snapshotId, {
      prune: false,
    });
    return { kind: 'restored', snapshot: local, generation };
  }

  /**
   * The signature check, and at the same time the HEAD the download makes first anyway: the check's
   * GET then costs the swap no round trip of its own. A failed HEAD is left to the download to redo.
   */
  async #authenticate(
    task: Extract<SnapshotTask, { kind: 'authenticate' }>,
  ): Promise<SnapshotTaskResults['authenticate']> {
    const store = this.#storeOf(task.files);
    const key = resolveSnapshotKey(task.recordedLocation, task.entry.uri);
    const [authenticated, head] = await Promise.all([
      authenticateSnapshot(store, {
        dataset: task.dataset,
        entry: task.entry,
        key,
        recordedLocation: task.recordedLocation,
        trusted: this.#trusted(task.trustedKeys),
      }),
      store.head(key).catch(() => undefined),
    ]);
    return { ...authenticated, head };
  }

  /** A swap as one task (see the `load` task in protocol.ts). */
  async #load(task: Extract<SnapshotTask, { kind: 'load' }>, signal: AbortSignal): Promise<LoadResult> {
    const started = performance.now();
    const { files, entry, port } = task;
    const options = this.#options(files);
    const report = (progress: LoadProgress): void => port.postMessage(progress);
    // Made while the bytes arrive, for the check below.
    this.#checkers.warm(files.engine, dirname(files.livePath));
    const downloaded = await downloadSnapshot(
      options,
      {
        entry,
        key: resolveSnapshotKey(task.recordedLocation, entry.uri),
        head: task.head,
        ...(task.signature === undefined ? {} : { blocksSha256: signedBlocksSha256(task.signature) }),
      },
      { signal },
    );
    report({
      stage: 'downloaded',
      transfer: downloaded.transfer,
      seconds: (performance.now() - started) / 1000,
    });
    // On a failure or an abort the check deletes the file; if the checker could not even be made,
    // the check never ran, and the file is deleted here.
    const prepared = await this.#checkers
      .use(files.engine, dirname(downloaded.tempPath), (checker) =>
        verifySnapshot(options, downloaded, task.recorded, { signal, checker }),
      )
      .catch(async (error: unknown) => {
        await discardPrepared(downloaded);
        throw error;
      });
    report({ stage: 'verified' });
    // The manifest records the signature, so a restart can check it against the keys trusted then.
    const signed =
      task.signature === undefined
        ? prepared
        : { ...prepared, snapshot: { ...prepared.snapshot, signature: task.signature } };
    try {
      // The last point a stop can still cancel: from the commit on, the file is the dataset's.
      signal.throwIfAborted();
      const snapshot = await commitSnapshot(options, signed);
      const generation = await linkGeneration(options.livePath, files.generationDir, snapshot.snapshotId, {
        prune: false,
      });
      return { snapshot, generation };
    } catch (error) {
      // Gone already when the rename happened; otherwise nobody will ever swap it in.
      await discardPrepared(prepared);
      throw error;
    }
  }
}

/**
 * Runs `work` with a signal that the task's abort port fires: its first message (the dataset
 * stopped) or its closing (the dataset's thread died). The port is closed when the work ends. It
 * listens from the turn the task arrives: a port whose thread died on the way emits its `close`
 * here after that (Node emits it once, never to a listener added later; one still queued in the
 * pool when the thread died is refused there, as it can no longer be sent).
 */
async function withAbort<T>(port: MessagePort, work: (signal: AbortSignal) => Promise<T>): Promise<T> {
  const controller = new AbortController();
  const abort = (): void => controller.abort(new Error(TASK_ABORTED));
  port.once('message', abort);
  port.once('close', abort);
  try {
    return await work(controller.signal);
  } finally {
    port.off('message', abort);
    port.off('close', abort);
    port.close();
  }
}

/**
 * The block manifest's SHA-256 the writer signed with the snapshot (null: none), so a delta uses
 * no manifest planted beside it. The statement was verified by the authenticate task; one that no
 * longer parses trusts no manifest.
 */
function signedBlocksSha256(signature: SignedEnvelope): string | null {
  const statement = parseSnapshotStatement(signature.statement);
  return 'problem' in statement ? null : statement.blocksSha256;
}
