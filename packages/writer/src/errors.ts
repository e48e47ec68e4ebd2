/**
 * Errors of the snapshot writer. Each has a stable `code` (the README tabulates them), a
 * one-sentence message naming the dataset, location or file and the fix, and the underlying
 * error as `cause`. Errors of the packages below (store, engines, core metadata) that already
 * name what failed are passed through unchanged.
 */
import { FerryError, type FerryErrorOptions, registerErrors } from '@ferry/core/base';

/** A publish or build option is missing, contradictory or unusable. */
export class WriterOptionsError extends FerryError {
  /** The option at fault (`dataset`, `engine`, `source`, `output`, `maxAttempts`). */
  readonly option: string;

  constructor(option: string, message: string, options: FerryErrorOptions = {}) {
    super('ERR_WRITER_OPTIONS', message, options);
    this.name = 'WriterOptionsError';
    this.option = option;
  }
}

/** The source query is not one SELECT, or DuckDB failed to run it. */
export class SnapshotQueryError extends FerryError {
  readonly dataset: string;

  constructor(dataset: string, problem: string, options: FerryErrorOptions = {}) {
    super(
      'ERR_WRITER_QUERY',
      `The query for dataset '${dataset}' failed: ${problem}; fix the SQL (one SELECT over local CSV/Parquet/JSON files or tables) and publish again.`,
      options,
    );
    this.name = 'SnapshotQueryError';
    this.dataset = dataset;
  }
}

/** A column the recorded schema marks NOT NULL holds NULLs in the new data. */
export class NotNullViolationError extends FerryError {
  readonly dataset: string;
  readonly column: string;

  constructor(dataset: string, column: string, options: FerryErrorOptions = {}) {
    super(
      'ERR_WRITER_NOT_NULL',
      `Column '${column}' of dataset '${dataset}' holds NULLs but the schema requires it NOT NULL; filter or fill the NULLs in the query, or publish under a new dataset name.`,
      options,
    );
    this.name = 'NotNullViolationError';
    this.dataset = dataset;
    this.column = column;
  }
}

/** A `file` source is not a usable snapshot (other engine, no table, live WAL, unreadable). */
export class SourceFileError extends FerryError {
  readonly dataset: string;
  readonly file: string;

  constructor(dataset: string, file: string, problem: string, options: FerryErrorOptions = {}) {
    super('ERR_WRITER_SOURCE_FILE', `Cannot publish '${file}' as dataset '${dataset}': ${problem}.`, options);
    this.name = 'SourceFileError';
    this.dataset = dataset;
    this.file = file;
  }
}

/** A built snapshot file broke the layout rules (a side file was left beside it). */
export class SnapshotFileError extends FerryError {
  readonly file: string;

  constructor(file: string, problem: string, options: FerryErrorOptions = {}) {
    super('ERR_WRITER_SNAPSHOT_FILE', `Snapshot file '${file}' is not publishable: ${problem}.`, options);
    this.name = 'SnapshotFileError';
    this.file = file;
  }
}

/** The dataset is recorded with another engine than the file being published. */
export class EngineMismatchError extends FerryError {
  readonly dataset: string;
  readonly location: string;
  readonly recorded: string;
  readonly engine: string;

  constructor(dataset: string, location: string, recorded: string, engine: string) {
    super(
      'ERR_WRITER_ENGINE_MISMATCH',
      `Dataset '${dataset}' in '${location}' is recorded with engine '${recorded}', so readers would refuse a ${engine} snapshot; publish a ${recorded} file or use a new dataset name.`,
    );
    this.name = 'EngineMismatchError';
    this.dataset = dataset;
    this.location = location;
    this.recorded = recorded;
    this.engine = engine;
  }
}

/**
 * The new table's schema neither equals nor widens the recorded one. Same code as core's
 * `IncompatibleSchemaError` (its `cause`), with the location in the message.
 */
export class SchemaRefusedError extends FerryError {
  readonly dataset: string;
  readonly location: string;

  constructor(dataset: string, location: string, detail: string, options: FerryErrorOptions = {}) {
    super(
      'ERR_INCOMPATIBLE_SCHEMA',
      `Refusing to publish dataset '${dataset}' to '${location}': ${detail}; keep the recorded columns (names, types, NOT NULL) in order and only append new ones, or publish under a new dataset name.`,
      options,
    );
    this.name = 'SchemaRefusedError';
    this.dataset = dataset;
    this.location = location;
  }
}

/** Every candidate key for the snapshot object was already taken. */
export class SnapshotKeyTakenError extends FerryError {
  readonly dataset: string;
  readonly key: string;

  constructor(dataset: string, location: string, key: string, attempts: number) {
    super(
      'ERR_WRITER_KEY_TAKEN',
      `Could not find a free snapshot key for dataset '${dataset}' in '${location}' after ${attempts} attempts (last: '${key}'); another writer is publishing it every second, so stop the other writer or retry later.`,
    );
    this.name = 'SnapshotKeyTakenError';
    this.dataset = dataset;
    this.key = key;
  }
}

/** Concurrent writers kept winning the conditional rewrite of metadata.json. */
export class MetadataConflictError extends FerryError {
  readonly dataset: string;
  readonly location: string;
  readonly attempts: number;

  constructor(dataset: string, location: string, attempts: number, options: FerryErrorOptions = {}) {
    super(
      'ERR_WRITER_METADATA_CONFLICT',
      `Could not record the snapshot of dataset '${dataset}' in '${location}metadata.json': ${attempts} conditional writes lost to concurrent writers; publish again later or raise maxAttempts.`,
      options,
    );
    this.name = 'MetadataConflictError';
    this.dataset = dataset;
    this.location = location;
    this.attempts = attempts;
  }
}

/**
 * The snapshot's entry would make metadata.json larger than readers accept (`maxMetadataBytes`):
 * written, it would make every reader of the location refuse every dataset in it.
 */
export class MetadataTooLargeError extends FerryError {
  readonly dataset: string;
  readonly location: string;
  readonly bytes: number;
  readonly maxBytes: number;

  constructor(
    dataset: string,
    location: string,
    bytes: number,
    maxBytes: number,
    options: FerryErrorOptions = {},
  ) {
    super(
      'ERR_WRITER_METADATA_TOO_LARGE',
      `Refusing to record the snapshot of dataset '${dataset}' in '${location}metadata.json': the document would be ${bytes} bytes, over the ${maxBytes} readers accept, and every reader of the location would then refuse all its datasets; remove old snapshot entries from metadata.json (keep each dataset's current one and its highest snapshot-id) or publish to a new location.`,
      options,
    );
    this.name = 'MetadataTooLargeError';
    this.dataset = dataset;
    this.location = location;
    this.bytes = bytes;
    this.maxBytes = maxBytes;
  }
}

/**
 * A heartbeat was asked for a current snapshot older than one metadata.json lists or than the one
 * the writer's last heartbeat named: metadata.json was set back, and the writer does not vouch for it.
 */
export class RollbackRefusedError extends FerryError {
  readonly dataset: string;
  readonly currentSnapshotId: number;
  readonly newerSnapshotId: number;

  constructor(
    dataset: string,
    location: string,
    currentSnapshotId: number,
    newerSnapshotId: number,
    options: FerryErrorOptions = {},
  ) {
    super(
      'ERR_WRITER_ROLLBACK',
      `Dataset '${dataset}' in '${location}metadata.json' names snapshot ${currentSnapshotId} as current, but snapshot ${newerSnapshotId} was published after it (listed, or named by this key's last heartbeat): metadata.json was set back without the writer, so no heartbeat vouches for it; restore current-snapshot-id to ${newerSnapshotId}, or publish a new snapshot.`,
      options,
    );
    this.name = 'RollbackRefusedError';
    this.dataset = dataset;
    this.currentSnapshotId = currentSnapshotId;
    this.newerSnapshotId = newerSnapshotId;
  }
}

/** A heartbeat was asked for a dataset with no current snapshot to vouch for. */
export class NothingPublishedError extends FerryError {
  readonly dataset: string;
  readonly location: string;

  constructor(dataset: string, location: string, options: FerryErrorOptions = {}) {
    super(
      'ERR_WRITER_NOTHING_PUBLISHED',
      `Dataset '${dataset}' has no current snapshot in '${location}metadata.json' for a heartbeat statement to name; publish a snapshot first.`,
      options,
    );
    this.name = 'NothingPublishedError';
    this.dataset = dataset;
    this.location = location;
  }
}

/** An incremental publish has no snapshot to start from, or its base could not be fetched intact. */
export class IncrementalBaseError extends FerryError {
  readonly dataset: string;

  constructor(dataset: string, problem: string, options: FerryErrorOptions = {}) {
    super(
      'ERR_WRITER_INCREMENTAL_BASE',
      `The incremental publish of dataset '${dataset}' has no base: ${problem}.`,
      options,
    );
    this.name = 'IncrementalBaseError';
    this.dataset = dataset;
  }
}

/** A statement of an incremental publish is not one INSERT, UPDATE or DELETE, or its engine failed to run it. */
export class IncrementalStatementError extends FerryError {
  readonly dataset: string;

  constructor(dataset: string, statement: string, problem: string, options: FerryErrorOptions = {}) {
    super(
      'ERR_WRITER_STATEMENT',
      `Statement '${statement.length > 80 ? `${statement.slice(0, 77)}...` : statement}' of the incremental publish of dataset '${dataset}' failed: ${problem}; give one INSERT, UPDATE or DELETE per statement in the dataset engine's SQL.`,
      options,
    );
    this.name = 'IncrementalStatementError';
    this.dataset = dataset;
  }
}

registerErrors({
  NothingPublishedError,
  RollbackRefusedError,
  IncrementalBaseError,
  IncrementalStatementError,
  WriterOptionsError,
  SnapshotQueryError,
  NotNullViolationError,
  SourceFileError,
  SnapshotFileError,
  EngineMismatchError,
  SchemaRefusedError,
  SnapshotKeyTakenError,
  MetadataConflictError,
  MetadataTooLargeError,
});
