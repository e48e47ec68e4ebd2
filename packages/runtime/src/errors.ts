/**
 * Errors of the runtime: what a caller of the embed API (and the HTTP server, which maps codes to
 * status codes) sees. Each has a stable code and a one-sentence message naming the dataset and the fix.
 */
import { FerryError } from '@ferry/core';

function list(names: readonly string[]): string {
  return names.length === 0 ? '(none)' : names.join(', ');
}

export class UnknownDatasetError extends FerryError {
  readonly table: string;
  constructor(table: string, datasets: readonly string[]) {
    super(
      'ERR_UNKNOWN_DATASET',
      `Table '${table}' is not a dataset of this runtime; the datasets are: ${list(datasets)}.`,
    );
    this.name = 'UnknownDatasetError';
    this.table = table;
  }
}

export class NoDatasetInQueryError extends FerryError {
  constructor(datasets: readonly string[]) {
    super(
      'ERR_NO_DATASET',
      `The query reads no dataset; name one of the datasets as a table in FROM: ${list(datasets)}.`,
    );
    this.name = 'NoDatasetInQueryError';
  }
}

export class MultipleDatasetsError extends FerryError {
  constructor(names: readonly string[]) {
    super(
      'ERR_MULTIPLE_DATASETS',
      `The query reads ${list(names)}, but each dataset is a separate snapshot file: query one dataset at a time.`,
    );
    this.name = 'MultipleDatasetsError';
  }
}

export class DatasetNotReadyError extends FerryError {
  readonly dataset: string;
  constructor(dataset: string, state: string) {
    super(
      'ERR_DATASET_NOT_READY',
      `Dataset '${dataset}' is not ready (${state}): it has no snapshot loaded yet; retry later or wait with ready('${dataset}').`,
    );
    this.name = 'DatasetNotReadyError';
    this.dataset = dataset;
  }
}

export class DatasetFailedError extends FerryError {
  constructor(dataset: string, reason: string) {
    super('ERR_DATASET_FAILED', `Dataset '${dataset}' cannot run: ${reason}`);
    this.name = 'DatasetFailedError';
  }
}

export class ReadyTimeoutError extends FerryError {
  constructor(names: readonly string[], timeoutMs: number) {
    super(
      'ERR_READY_TIMEOUT',
      `Dataset(s) ${list(names)} did not start serving within ${timeoutMs} ms; check the logs for why (waiting for a first snapshot, store unreachable) or raise timeoutMs.`,
    );
    this.name = 'ReadyTimeoutError';
  }
}

export class QueryTimeoutError extends FerryError {
  constructor(dataset: string, timeoutMs: number) {
    super(
      'ERR_QUERY_TIMEOUT',
      `The query on dataset '${dataset}' ran longer than ${timeoutMs} ms and was cancelled; narrow it or raise queryTimeoutMs.`,
    );
    this.name = 'QueryTimeoutError';
  }
}

export class ResultTooLargeError extends FerryError {
  constructor(dataset: string, maxRows: number) {
    super(
      'ERR_RESULT_TOO_LARGE',
      `The query on dataset '${dataset}' returned more than ${maxRows} rows; add a LIMIT or raise maxResultRows.`,
    );
    this.name = 'ResultTooLargeError';
  }
}

export class RuntimeClosedError extends FerryError {
  constructor() {
    super('ERR_RUNTIME_CLOSED', 'The runtime is closed; create a new one with createRuntime().');
    this.name = 'RuntimeClosedError';
  }
}

export class ThreadFileMissingError extends FerryError {
  constructor(file: string) {
    super(
      'ERR_THREAD_FILE_MISSING',
      `Thread entry ${file} was not found; build the runtime package first (pnpm build).`,
    );
    this.name = 'ThreadFileMissingError';
  }
}
