/**
 * Errors the dataset machine raises itself (the snapshot refusals it raises before a download use
 * `SnapshotRejectedError` from the package's errors module). Codes are stable: tests and the
 * README match on them.
 */
import { FerryError, registerErrors } from '../errors.js';

/** The runtime started the machine without providing one of its actors. */
export class ActorNotProvidedError extends FerryError {
  readonly actor: string;

  constructor(actor: string) {
    super(
      'ERR_ACTOR_NOT_PROVIDED',
      `The dataset machine's actor '${actor}' was not provided; pass it with machine.provide({ actors: { ${actor} } }).`,
    );
    this.name = 'ActorNotProvidedError';
    this.actor = actor;
  }
}

/** metadata.json makes a snapshot current that its `snapshots` list does not contain. */
export class CurrentSnapshotMissingError extends FerryError {
  readonly dataset: string;
  readonly snapshotId: number;

  constructor(dataset: string, snapshotId: number) {
    super(
      'ERR_CURRENT_SNAPSHOT_MISSING',
      `Dataset '${dataset}' has current-snapshot-id ${snapshotId} but no snapshot entry with that id; ` +
        'fix the writer so it appends the entry before making it current.',
    );
    this.name = 'CurrentSnapshotMissingError';
    this.dataset = dataset;
    this.snapshotId = snapshotId;
  }
}

registerErrors({ ActorNotProvidedError, CurrentSnapshotMissingError });
