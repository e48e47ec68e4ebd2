/**
 * The seam between a runtime and its test-only entry point (`@ferry/runtime/testing`): a runtime
 * carries its hooks under a registered symbol, so the testing entry finds them even when it and
 * the runtime were loaded as different module instances (sources in one place, `dist/` in another).
 * Nothing here is part of the public `Runtime` interface.
 */
export interface RuntimeTestHooks {
  /** How many GETs of metadata.json the coordinator has made so far. */
  metadataGets(): Promise<number>;
  /** Ends a dataset's thread as a crash would (an uncaught error in it); supervision restarts it. */
  terminateDatasetThread(name: string): Promise<void>;
  /** Queries the query pools have not answered yet (a cancelled one counts until its engine stopped). */
  queriesInFlight(): number;
  /** Queries admitted now (running, queued, or an open stream) and refused so far. */
  admission(): { readonly inFlight: number; readonly rejected: number };
}

export const TEST_HOOKS: unique symbol = Symbol.for('@ferry/runtime/test-hooks') as never;

export interface WithTestHooks {
  readonly [TEST_HOOKS]: RuntimeTestHooks;
}
