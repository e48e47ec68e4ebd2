/**
 * Errors of the snapshot file pipeline (download, validation, swap). Validation failures use the
 * core's {@link SnapshotRejectedError} codes so the dataset machine can tell a bad snapshot (try the
 * next candidate) from a bad path to it (retry later); the messages the spec quotes are reproduced
 * exactly, because operators grep for them.
 */
import {
  FerryError,
  type FerryErrorOptions,
  registerErrors,
  SnapshotRejectedError,
  SnapshotRejectionCode,
} from '@ferry/core/base';

export function sizeMismatch(uri: string, expected: number, actual: number): SnapshotRejectedError {
  return new SnapshotRejectedError(
    SnapshotRejectionCode.sizeMismatch,
    `Snapshot ${uri} size mismatch. expected=${expected} actual=${actual}`,
  );
}

export function unsupportedChecksumAlgorithm(uri: string, algorithm: string): SnapshotRejectedError {
  return new SnapshotRejectedError(
    SnapshotRejectionCode.unsupportedChecksumAlgorithm,
    `Snapshot ${uri} uses unsupported checksum algorithm ${algorithm}`,
  );
}

export function checksumMismatch(uri: string, expected: string, actual: string): SnapshotRejectedError {
  return new SnapshotRejectedError(
    SnapshotRejectionCode.checksumMismatch,
    `Snapshot ${uri} checksum mismatch. expected=${expected} actual=${actual}`,
  );
}

/** The entry is listed in metadata.json but its object is gone (deleted by a lifecycle rule?). */
export function snapshotObjectMissing(
  dataset: string,
  uri: string,
  options: FerryErrorOptions = {},
): SnapshotRejectedError {
  return new SnapshotRejectedError(
    SnapshotRejectionCode.objectMissing,
    `Snapshot ${uri} of dataset '${dataset}' is listed in metadata.json but the object does not exist; ` +
      'publish a new snapshot or restore the object.',
    options,
  );
}

/** Not enough free space in the data directory for a snapshot: refused before any byte is written. */
export class InsufficientDiskSpaceError extends FerryError {
  readonly needed: number;
  readonly available: number;

  constructor(dataset: string, directory: string, needed: number, available: number) {
    super(
      'ERR_DISK_SPACE',
      `Not enough free disk space to download the snapshot of dataset '${dataset}' into ${directory}: ` +
        `needs ${needed} bytes, ${available} available; free space there or point the dataset's file ` +
        'param (duckdb_file / sqlite_file) at a larger volume.',
    );
    this.name = 'InsufficientDiskSpaceError';
    this.needed = needed;
    this.available = available;
  }
}

/**
 * The disk filled up while a snapshot was being written (something else took the space after the
 * free-space check). Same code as {@link InsufficientDiskSpaceError}: the fix is the same.
 */
export class DiskFullError extends FerryError {
  constructor(dataset: string, directory: string, options: FerryErrorOptions = {}) {
    super(
      'ERR_DISK_SPACE',
      `The disk holding ${directory} filled up while the snapshot of dataset '${dataset}' was downloaded; ` +
        "free space there or point the dataset's file param (duckdb_file / sqlite_file) at a larger volume.",
      options,
    );
    this.name = 'DiskFullError';
  }
}

/**
 * The object store ended the body before the announced size (connection cut, object replaced
 * mid-download). A transport failure, not a bad snapshot: download it again.
 */
export class TruncatedDownloadError extends FerryError {
  readonly retryable = true;

  constructor(dataset: string, uri: string, expected: number, received: number) {
    super(
      'ERR_DOWNLOAD_TRUNCATED',
      `Download of snapshot ${uri} for dataset '${dataset}' ended after ${received} of ${expected} bytes; ` +
        'the connection was cut or the object changed, so download it again.',
    );
    this.name = 'TruncatedDownloadError';
  }
}

/** `commitSnapshot` of a temporary file that is gone or was changed (a concurrent `restoreLocal`?). */
export class PreparedSnapshotGoneError extends FerryError {
  constructor(dataset: string, tempPath: string) {
    super(
      'ERR_PREPARED_SNAPSHOT_GONE',
      `The downloaded snapshot of dataset '${dataset}' at ${tempPath} is gone or was modified before the swap; ` +
        'download it again (and do not run restoreLocal while a download is in progress).',
    );
    this.name = 'PreparedSnapshotGoneError';
  }
}

registerErrors({
  InsufficientDiskSpaceError,
  DiskFullError,
  TruncatedDownloadError,
  PreparedSnapshotGoneError,
});
