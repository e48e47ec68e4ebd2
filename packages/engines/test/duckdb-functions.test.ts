/**
 * The function tables are complete for the DuckDB Ferry ships: every function `duckdb_functions()`
 * lists (scalar, aggregate, macro; table and table macro) is classified as allowed or refused, and
 * nothing is classified that DuckDB no longer has. A DuckDB upgrade that brings a function fails
 * here, naming it, until it is classified in duckdb-functions.ts — and until then the check
 * refuses it (shown with a function registered at run time, which no table lists).
 */
import { DuckDBInstance, DuckDBScalarFunction, VARCHAR } from '@duckdb/node-api';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  DUCKDB_ALLOWED_FUNCTIONS,
  DUCKDB_INTERNAL_FUNCTION,
  DUCKDB_REFUSED_FUNCTIONS,
  DUCKDB_REFUSED_TABLE_FUNCTIONS,
  DUCKDB_TABLE_FUNCTIONS,
} from '../src/duckdb-functions.js';
import { DUCKDB_EXTENSIONS_OFF } from '../src/duckdb-lockdown.js';
import { checkDuckDbStatement } from '../src/statement-check.js';

let instance: DuckDBInstance;
let connection: Awaited<ReturnType<DuckDBInstance['connect']>>;

beforeAll(async () => {
  // As the query namespaces make theirs: the bundled extensions only, nothing loaded on demand.
  instance = await DuckDBInstance.create(':memory:', { ...DUCKDB_EXTENSIONS_OFF, threads: '1' });
  connection = await instance.connect();
});

afterAll(() => {
  connection.closeSync();
  instance.closeSync();
});

async function names(...types: string[]): Promise<string[]> {
  const list = types.map((type) => `'${type}'`).join(', ');
  const reader = await connection.runAndReadAll(
    `SELECT DISTINCT function_name FROM duckdb_functions() WHERE database_name = 'system' AND function_type IN (${list}) ORDER BY 1`,
  );
  return reader.getRows().map((row) => String(row[0]));
}

describe('the DuckDB function tables', () => {
  it('classify every scalar, aggregate and macro function DuckDB has', async () => {
    const unclassified = (await names('scalar', 'aggregate', 'macro')).filter(
      (name) =>
        !DUCKDB_ALLOWED_FUNCTIONS.has(name) &&
        !DUCKDB_REFUSED_FUNCTIONS.has(name) &&
        !DUCKDB_INTERNAL_FUNCTION.test(name),
    );
    expect(unclassified, 'classify these in duckdb-functions.ts (allowed or refused, with a reason)').toEqual(
      [],
    );
  });

  it('classify every table function and table macro DuckDB has', async () => {
    const unclassified = (await names('table', 'table_macro')).filter(
      (name) => !DUCKDB_TABLE_FUNCTIONS.has(name) && !DUCKDB_REFUSED_TABLE_FUNCTIONS.has(name),
    );
    expect(unclassified, 'classify these in duckdb-functions.ts (allowed or refused, with a reason)').toEqual(
      [],
    );
  });

  it('list nothing DuckDB does not have (the tables describe this DuckDB, not an older one)', async () => {
    const scalars = new Set(await names('scalar', 'aggregate', 'macro'));
    const tables = new Set(await names('table', 'table_macro'));
    expect(
      [...DUCKDB_ALLOWED_FUNCTIONS, ...DUCKDB_REFUSED_FUNCTIONS.keys()].filter((n) => !scalars.has(n)),
    ).toEqual([]);
    expect(
      [...DUCKDB_TABLE_FUNCTIONS, ...DUCKDB_REFUSED_TABLE_FUNCTIONS.keys()].filter((n) => !tables.has(n)),
    ).toEqual([]);
  });

  it('classify no function both ways', () => {
    expect([...DUCKDB_REFUSED_FUNCTIONS.keys()].filter((name) => DUCKDB_ALLOWED_FUNCTIONS.has(name))).toEqual(
      [],
    );
    expect(
      [...DUCKDB_REFUSED_TABLE_FUNCTIONS.keys()].filter((name) => DUCKDB_TABLE_FUNCTIONS.has(name)),
    ).toEqual([]);
  });
});

describe('the check enforces the allow-lists', () => {
  it('refuses a function DuckDB has that no table lists (as a newer DuckDB would bring one)', async () => {
    connection.registerScalarFunction(
      DuckDBScalarFunction.create({
        name: 'ferry_unlisted',
        returnType: VARCHAR,
        mainFunction: (_info, input, output) => {
          for (let row = 0; row < input.rowCount; row++) output.setItem(row, 'x');
          output.flush();
        },
      }),
    );
    // Control: DuckDB itself runs it.
    expect((await connection.runAndReadAll('SELECT ferry_unlisted()')).getRows()).toEqual([['x']]);
    await expect(checkDuckDbStatement(connection, 'SELECT ferry_unlisted() AS v')).rejects.toMatchObject({
      code: 'ERR_STATEMENT_REJECTED',
      statement: 'ferry_unlisted()',
      message: expect.stringContaining('not among the functions this replica allows'),
    });
  });

  it('refuses internal functions and functions of an attached file', async () => {
    await expect(
      checkDuckDbStatement(connection, 'SELECT __internal_compress_integral_utinyint(1::BIGINT, 0::BIGINT)'),
    ).rejects.toMatchObject({ statement: '__internal_compress_integral_utinyint()' });
    await expect(checkDuckDbStatement(connection, 'SELECT other_db.main.f(1)')).rejects.toMatchObject({
      code: 'ERR_STATEMENT_REJECTED',
      message: expect.stringContaining("attached database's file"),
    });
  });

  it('leaves a name DuckDB does not have to DuckDB’s own error', async () => {
    await expect(checkDuckDbStatement(connection, 'SELECT no_such_function_here(1)')).rejects.toThrow(
      /Scalar Function with name no_such_function_here does not exist/,
    );
  });

  it('allows ordinary SQL of every kind of function: operators, aggregates, windows, macros, lambdas', async () => {
    const prepared = await checkDuckDbStatement(
      connection,
      `SELECT upper('a') || 'b' AS s, sum(x) OVER () AS w, count(*) FILTER (WHERE x > 1) AS c,
              list_transform([1, 2], lambda v: v + 1) AS l, nullif(1, 2) AS n, 'ab' LIKE 'a%' AS k
       FROM range(3) t(x) GROUP BY x`,
    );
    try {
      expect((await prepared.runAndReadAll()).getRows()).toHaveLength(3);
    } finally {
      prepared.destroySync();
    }
  });
});
