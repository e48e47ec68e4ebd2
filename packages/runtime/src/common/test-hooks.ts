/**
 * The seam between a runtime and its test-only entry point (`@ferry/runtime/testing`): a runtime
 * carries its hooks under a registered symbol, so the testing entry finds them even when it and
 * the runtime were loaded as different module instances (sources in one place, `dist/` in another).
 * The messages only the hooks send are here too, not in the product's protocol (`protocol.ts`):
 * the threads answer them beside their own messages.
 */
export interface RuntimeTestHooks {
  /** How many GETs of metadata.json the coordinator has made so far. */
  metadataGets(): Promise<number>;
  /** Ends a dataset's thread as a crash would (an uncaught error in it); supervision restarts it. */
  terminateDatasetThread(name: string): Promise<void>;
  /**
   * Ends a dataset's thread at once, as its heap limit would: none of its own code runs (an uncaught
   * error waits up to 10 s for its work first). Resolves once it has exited; supervision restarts it.
   */
  killDatasetThread(name: string): Promise<void>;
  /** Ends the coordinator thread as a crash would; the host restarts it. */
  terminateCoordinatorThread(): Promise<void>;
  /** Queries the query pools have not answered yet (a cancelled one counts until its engine stopped). */
  queriesInFlight(): number;
  /** Statements handed to each engine's query pool so far (a re-routed one counts for both). */
  queriesSent(): { readonly duckdb: number; readonly sqlite: number };
  /** Queries admitted now (running, queued, or an open stream) and refused so far. */
  admission(): { readonly inFlight: number; readonly rejected: number };
  /** The V8 young generation of each thread the coordinator runs (itself, dataset threads, snapshot workers). */
  threadYoungGenerations(): Promise<readonly ThreadYoungGeneration[]>;
}

/** One running thread and the young generation (MiB) its isolate was given. */
export interface ThreadYoungGeneration {
  /** `coordinator`, `dataset <name>` or `snapshot worker`. */
  readonly thread: string;
  readonly maxYoungGenerationSizeMb: number;
}

export const TEST_HOOKS: unique symbol = Symbol.for('@ferry/runtime/test-hooks') as never;

export interface WithTestHooks {
  readonly [TEST_HOOKS]: RuntimeTestHooks;
}

/** A crash drill, host → dataset thread (on its host port): the thread throws an uncaught error, as a bug would. */
export interface CrashDrill {
  readonly type: 'test-crash';
}

/** host → coordinator: how many GETs of metadata.json its readers made (answered with an `RpcResponse`). */
export interface MetadataGetsRequest {
  readonly type: 'test-metadata-gets';
  readonly id: number;
}

/** host → coordinator: the young generation of each thread it runs (answered with an `RpcResponse`). */
export interface ThreadYoungGenerationsRequest {
  readonly type: 'test-thread-young-generations';
  readonly id: number;
}

/** host → coordinator: end a dataset's thread with `Worker.terminate()` (answered once it has exited). */
export interface KillDatasetRequest {
  readonly type: 'test-kill-dataset';
  readonly id: number;
  readonly dataset: string;
}

/** What only the test hooks ask the coordinator. */
export type CoordinatorTestRequest = MetadataGetsRequest | ThreadYoungGenerationsRequest | KillDatasetRequest;
