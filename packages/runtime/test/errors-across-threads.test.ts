/**
 * Errors keep their class across every thread they cross, in a runtime with real threads against
 * a real local S3 (fauxqs): a query refused or failed in a DuckDB query worker or in the piscina
 * SQLite pool, a store failure in the coordinator answering `snapshots()`, and a metadata failure the
 * coordinator reads for a dataset thread (whose machine acts on the error's `permanent` field). Each
 * arrives as an instance of the class exported by `@ferry/runtime`, with its code, its own fields,
 * its cause and the stack of the thread that threw it.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  createRuntime,
  FerryError,
  InvalidParameterError,
  MetadataError,
  memoryLogger,
  QueryFailedError,
  type Runtime,
  StoreError,
  WriteRejectedError,
} from '../src/index.js';
import {
  BUCKET,
  location,
  nextEvent,
  publishVersion,
  refusedPort,
  spicepod,
  tempDir,
  useLocalAws,
} from './support.js';

const aws = useLocalAws();

/** The error `work` rejects with (the test fails if it resolves). */
async function rejectionOf(work: Promise<unknown>): Promise<Error> {
  const outcome = await work.then(
    () => undefined,
    (error: unknown) => error,
  );
  expect(outcome).toBeInstanceOf(Error);
  return outcome as Error;
}

describe('errors thrown in the query pools', () => {
  let runtime: Runtime;

  beforeAll(async () => {
    await publishVersion(aws, 'orders', 'duckdb', 1, { prefix: 'errors/' });
    await publishVersion(aws, 'users', 'sqlite', 1, { rows: 10, prefix: 'errors/' });
    const yaml = spicepod(
      aws,
      [
        { name: 'orders', engine: 'duckdb' },
        { name: 'users', engine: 'sqlite' },
      ],
      { prefix: 'errors/' },
    );
    const dataDir = await tempDir('ferry-errors-');
    runtime = await createRuntime({ yaml, baseDir: dataDir }, { logger: memoryLogger(), dataDir });
    await runtime.ready(undefined, { timeoutMs: 30_000 });
  });

  afterAll(async () => {
    await runtime?.close();
  });

  for (const [table, pool] of [
    ['orders', 'a DuckDB query worker'],
    ['users', 'the SQLite pool'],
  ] as const) {
    it(`a write refused in ${pool} is a WriteRejectedError with its operation and table`, async () => {
      const error = await rejectionOf(runtime.query(`DELETE FROM ${table}`));
      expect(error).toBeInstanceOf(WriteRejectedError);
      expect(error).toBeInstanceOf(FerryError);
      const refused = error as WriteRejectedError;
      expect(refused.name).toBe('WriteRejectedError');
      expect(refused.code).toBe('ERR_WRITE_REJECTED');
      expect(refused.operation).toBe('delete');
      expect(refused.table).toMatch(new RegExp(table));
      expect(refused.message).toMatch(/are not permitted when refresh_mode is 'snapshot'/);
      // The stack is the worker's, not the host's: it names the engines' statement check.
      expect(refused.stack).toMatch(/^WriteRejectedError: /);
      expect(refused.stack).toMatch(/engines/);
    });

    it(`a query failing in ${pool} is a QueryFailedError carrying the engine's error as its cause`, async () => {
      const error = await rejectionOf(runtime.query(`SELECT no_such_column FROM ${table}`));
      expect(error).toBeInstanceOf(QueryFailedError);
      expect((error as QueryFailedError).code).toBe('ERR_QUERY_FAILED');
      expect(error.cause).toBeInstanceOf(Error);
      expect((error.cause as Error).message).toMatch(/no_such_column/);
    });

    it(`a parameter ${pool} cannot bind is an InvalidParameterError`, async () => {
      const error = await rejectionOf(runtime.query(`SELECT id FROM ${table} WHERE id = ?`, [{ nested: 1 }]));
      expect(error).toBeInstanceOf(InvalidParameterError);
      expect((error as InvalidParameterError).code).toBe('ERR_INVALID_PARAMETER');
    });

    it(`parameters passed to ${pool} as an options object, not an array, are an InvalidParameterError naming the fix`, async () => {
      // A JavaScript caller's mistake TypeScript would catch: `query(sql, { params: [1] })`.
      const asked = { params: [1] } as unknown as [];
      for (const query of [
        () => runtime.query(`SELECT id FROM ${table} WHERE id = ?`, asked),
        () => runtime.queryArrow(`SELECT id FROM ${table} WHERE id = ?`, asked),
      ]) {
        const error = await rejectionOf(query());
        expect(error).toBeInstanceOf(InvalidParameterError);
        expect((error as InvalidParameterError).message).toMatch(
          /are an object, not an array; pass one value per placeholder as an array/,
        );
      }
    });
  }
});

describe('errors thrown in the coordinator', () => {
  it('snapshots() of a dataset whose store is unreachable rejects with a StoreError: retryable, its URI and the network cause', async () => {
    const port = await refusedPort();
    const yaml = spicepod(aws, [{ name: 'far', engine: 'duckdb', interval: '1h' }], {
      prefix: 'unreachable/',
      params: { s3_endpoint: `http://127.0.0.1:${port}` },
    });
    const dataDir = await tempDir('ferry-errors-store-');
    const runtime = await createRuntime({ yaml, baseDir: dataDir }, { logger: memoryLogger(), dataDir });
    try {
      const error = await rejectionOf(runtime.snapshots('far'));
      expect(error).toBeInstanceOf(StoreError);
      const failed = error as StoreError;
      expect(failed.code).toBe('ERR_STORE');
      expect(failed.retryable).toBe(true);
      expect(failed.operation).toBe('get');
      expect(failed.uri).toBe(`${location('unreachable/')}metadata.json`);
      expect(failed.cause).toBeInstanceOf(Error);
      expect(failed.stack).toMatch(/^StoreError: /);
    } finally {
      await runtime.close();
    }
  });

  it('snapshots() of a location whose metadata.json is invalid rejects with a MetadataError naming the field', async () => {
    await aws.putObject(BUCKET, 'invalid/metadata.json', '{"format-version": 1, "location": 5}');
    const yaml = spicepod(aws, [{ name: 'bad', engine: 'duckdb', interval: '1h' }], { prefix: 'invalid/' });
    const dataDir = await tempDir('ferry-errors-metadata-');
    const runtime = await createRuntime({ yaml, baseDir: dataDir }, { logger: memoryLogger(), dataDir });
    try {
      const error = await rejectionOf(runtime.snapshots('bad'));
      expect(error).toBeInstanceOf(MetadataError);
      const invalid = error as MetadataError;
      expect(invalid.code).toBe('ERR_METADATA_INVALID');
      expect(invalid.path).toBe('location');
      expect(invalid.location).toBe(location('invalid/'));
      expect(invalid.permanent).toBe(false);
    } finally {
      await runtime.close();
    }
  });
});

describe('errors the coordinator answers a dataset thread with', () => {
  it("an unsupported format-version reaches the dataset's machine as permanent: logged as an error, not retried", async () => {
    const prefix = 'format-2/';
    await aws.putObject(BUCKET, `${prefix}metadata.json`, JSON.stringify({ 'format-version': 2 }));
    const yaml = spicepod(aws, [{ name: 'future', engine: 'duckdb', interval: '1h' }], { prefix });
    const dataDir = await tempDir('ferry-errors-format-');
    const logger = memoryLogger();
    const runtime = await createRuntime({ yaml, baseDir: dataDir }, { logger, dataDir });
    try {
      const failed = await nextEvent(runtime, 'error', (event) => event.dataset === 'future');
      expect(failed.code).toBe('ERR_UNSUPPORTED_FORMAT_VERSION');
      const line = logger.records.find((record) => record.message.includes('unsupported format version 2'));
      // `permanent` is a field of UnsupportedFormatVersionError: it decides the level (warn otherwise).
      expect(line?.level).toBe('error');
    } finally {
      await runtime.close();
    }
  });
});
