/**
 * The one place each query engine of the namespace turns SQL text into a prepared, checked
 * statement: every query the namespaces run goes through {@link prepareDuckDbStatement} or
 * {@link prepareSqliteStatement}, so the statement check can change in one place per engine. The
 * check today: the read-only guard (Spice's refusal wording for writes), then the engine's own
 * verdict — DuckDB's statement type of the prepared statement (SELECT; EXPLAIN), SQLite's
 * `readonly && reader` (see `prepareReadOnlyStatement`).
 */
import { type DuckDBConnection, type DuckDBPreparedStatement, StatementType } from '@duckdb/node-api';
import type Database from 'better-sqlite3';
import { StatementRejectedError } from './errors.js';
import { assertReadOnlySql } from './sql-guard.js';
import { prepareReadOnlyStatement } from './sqlite-engine.js';

/** Statement types DuckDB runs (it plans DESCRIBE, SHOW, SUMMARIZE and PRAGMA table_info as SELECT). */
const DUCKDB_READ_TYPES: ReadonlySet<StatementType> = new Set([StatementType.SELECT, StatementType.EXPLAIN]);

/** The prepared, checked statement, or Spice's refusal / `ERR_STATEMENT_REJECTED`. */
export async function prepareDuckDbStatement(
  connection: DuckDBConnection,
  sql: string,
): Promise<DuckDBPreparedStatement> {
  assertReadOnlySql(sql, 'duckdb');
  const prepared = await connection.prepare(sql);
  if (!DUCKDB_READ_TYPES.has(prepared.statementType)) {
    const kind = StatementType[prepared.statementType] ?? String(prepared.statementType);
    prepared.destroySync();
    throw new StatementRejectedError(
      kind,
      `DuckDB refused a ${kind} statement on a read-only snapshot replica; send a single SELECT query.`,
    );
  }
  return prepared;
}

/** The prepared, checked statement, or Spice's refusal / `ERR_STATEMENT_REJECTED`. */
export function prepareSqliteStatement(db: Database.Database, sql: string): Database.Statement {
  assertReadOnlySql(sql, 'sqlite');
  return prepareReadOnlyStatement(db, sql);
}
