/**
 * DuckDB as B9's baselines call it: one read-only instance of `path`, a few connections, each
 * statement run with `runAndReadAll(text)` on a free one (queued when all are busy) and answered as
 * its rows' JSON-safe objects.
 */
import { type DuckDBConnection, DuckDBInstance } from '@duckdb/node-api';

export async function duckDbRows(
  path: string,
  options: { readonly threads?: number } = {},
): Promise<(sql: string) => Promise<unknown[]>> {
  const instance = await DuckDBInstance.create(path, {
    access_mode: 'READ_ONLY',
    ...(options.threads === undefined ? {} : { threads: String(options.threads) }),
  });
  const idle: DuckDBConnection[] = [];
  for (let n = 0; n < 4; n++) idle.push(await instance.connect());
  const waiting: ((connection: DuckDBConnection) => void)[] = [];
  return async (sql) => {
    const connection =
      idle.pop() ?? (await new Promise<DuckDBConnection>((resolve) => waiting.push(resolve)));
    try {
      return (await connection.runAndReadAll(sql)).getRowObjectsJson();
    } finally {
      const next = waiting.shift();
      if (next === undefined) idle.push(connection);
      else next(connection);
    }
  };
}
