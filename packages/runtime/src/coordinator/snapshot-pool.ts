/**
 * The snapshot pool, owned by the coordinator: a small piscina pool (default 2 workers, none while
 * idle) that runs every step of the swap pipeline for every dataset (`snapshot-tasks.ts`), so the
 * S3 SDK and the engines load once per pool worker instead of once per dataset thread.
 *
 * Workers keep their event loop running between tasks (`atomics: 'disabled'`): their warm checkers
 * close on a timer, and an abort port's message must reach a running download. Tasks are never
 * aborted through piscina (that ends the worker, and a worker must not end while DuckDB works for
 * it): a load carries its own port. `release` goes to one worker exactly.
 */
import { deserializeError } from '@ferry/core/base';
import { Piscina } from 'piscina';
import type { CoordinatorWorkerData, SnapshotTask, SnapshotTaskReply } from '../common/protocol.js';
import { threadExecArgv, threadFile } from '../common/thread-files.js';
import { SMALL_THREAD_LIMITS, youngGenerationOf } from '../common/thread-limits.js';

/** A task's queue option: the thread id of the one worker it must run on (while that worker lives). */
const PLACEMENT = Piscina.queueOptionsSymbol;

type PlacedTask = SnapshotTask & { readonly [PLACEMENT]?: number };

type Balancer = NonNullable<NonNullable<ConstructorParameters<typeof Piscina>[0]>['loadBalancer']>;

/** A free worker; a task for one worker waits for it while it lives. */
const balance: Balancer = (task, workers) => {
  const only = (task as unknown as Record<symbol, unknown>)[PLACEMENT];
  if (typeof only === 'number') {
    const worker = workers.find((candidate) => candidate.id === only && !candidate.terminating);
    if (worker !== undefined) return worker.currentUsage === 0 ? worker : null;
  }
  return workers.find((worker) => worker.currentUsage === 0 && !worker.terminating) ?? null;
};

export class SnapshotPool {
  readonly #pool: Piscina<PlacedTask, SnapshotTaskReply>;

  /** Workers at most `snapshotThreads`; an idle one ends after `snapshotIdleTimeoutMs`. */
  constructor(options: Pick<CoordinatorWorkerData, 'snapshotThreads' | 'snapshotIdleTimeoutMs'>) {
    this.#pool = new Piscina({
      filename: threadFile('snapshot-pool/thread').href,
      ...threadExecArgv(),
      minThreads: 0,
      maxThreads: Math.max(1, options.snapshotThreads),
      idleTimeout: options.snapshotIdleTimeoutMs,
      concurrentTasksPerWorker: 1,
      atomics: 'disabled',
      loadBalancer: balance,
      // A small young generation (thread-limits.ts): V8's default grew each to 32 MiB of new space.
      resourceLimits: SMALL_THREAD_LIMITS,
    });
  }

  /** The V8 young generation (MiB) each running worker was given, as its isolate reports it. */
  youngGenerations(): number[] {
    return this.#pool.threads.map(youngGenerationOf);
  }

  /** Runs a task (a load's port goes in the transfer list); rejects with its error rebuilt (code, message, `permanent`). */
  async run(task: SnapshotTask): Promise<unknown> {
    const reply = await this.#pool.run(task, {
      transferList: (task.kind === 'load' ? [task.port] : []) as never,
    });
    if (!reply.ok) throw deserializeError(reply.error);
    return reply.value;
  }

  /**
   * Ends the pool: each worker first closes its checkers and stores (a `release` task placed on
   * it), then the workers end. Tasks still running finish first. Called once (the coordinator's
   * close is).
   */
  async close(): Promise<void> {
    await Promise.allSettled(
      this.#pool.threads.map((worker) =>
        this.#pool.run({ kind: 'release', [PLACEMENT]: worker.threadId } as PlacedTask),
      ),
    );
    await this.#pool.close();
  }
}
