/**
 * The "direct" DuckDB baseline of B1 and B8: SQL run on one connection through `@duckdb/node-api`
 * with each statement prepared once and reused — the best a user would write without Ferry.
 */
import type { DuckDBConnection, DuckDBPreparedStatement } from '@duckdb/node-api';
import type { JsonValue } from '@ferry/core';

export interface DirectRunner {
  /** Binds the (integer) parameters, runs, and reads every row as JSON-safe objects. */
  run(sql: string, params: readonly JsonValue[]): Promise<unknown>;
  /** Destroys the prepared statements (the caller closes the connection). */
  close(): void;
}

export function preparedRunner(connection: DuckDBConnection): DirectRunner {
  const prepared = new Map<string, DuckDBPreparedStatement>();
  return {
    async run(sql, params) {
      let statement = prepared.get(sql);
      if (statement === undefined) {
        statement = await connection.prepare(sql);
        prepared.set(sql, statement);
      }
      statement.clearBindings();
      for (const [index, param] of params.entries()) statement.bindBigInt(index + 1, BigInt(param as number));
      return (await statement.runAndReadAll()).getRowObjectsJson();
    },
    close() {
      for (const statement of prepared.values()) statement.destroySync();
    },
  };
}
