/**
 * Named query parameters (`$name`, as Spice's HTTP API and SDKs send them with `"parameters":
 * { "name": … }`) bound through the numbered ones both engines take: each distinct `$name` becomes
 * `$1`, `$2`, … in order of first appearance, and its value takes that place in the list. The
 * markers are found by the guard's tokenizer, so a `$name` inside a string, a quoted identifier or
 * a comment is left alone.
 */
import type { QueryParam } from '@ferry/core/base';
import { InvalidParameterError } from './errors.js';
import { type SqlDialect, tokenizeSql } from './sql-guard.js';

export interface NumberedStatement<T extends QueryParam = QueryParam> {
  readonly sql: string;
  readonly params: readonly T[];
}

/**
 * Rewrites `sql`'s `$name` markers to `$1`, `$2`, … and lists `named`'s values in that order. Keys
 * may be written with or without the `$`. Throws `ERR_INVALID_PARAMETER` for a marker with no
 * value, and for positional markers (`?`, `?1`, `$1`) or SQLite's `:name` / `@name` next to named
 * values.
 */
export function numberNamedParameters<T extends QueryParam>(
  sql: string,
  named: Readonly<Record<string, T>>,
  dialect: SqlDialect = 'duckdb',
): NumberedStatement<T> {
  const values = new Map<string, T>();
  for (const [key, value] of Object.entries(named))
    values.set(key.startsWith('$') ? key.slice(1) : key, value);
  const numbers = new Map<string, number>();
  const params: T[] = [];
  let out = '';
  let copied = 0;
  for (const token of tokenizeSql(sql, dialect, { positions: true })) {
    if (token.kind !== 'parameter') continue;
    if (!/^\$[^\d]/.test(token.text)) {
      throw new InvalidParameterError(
        `The statement has the marker ${token.text} but "parameters" is an object of named values; write every parameter as $name, or send "parameters" as a list for ? and $1, $2, ….`,
      );
    }
    const name = token.text.slice(1);
    let number = numbers.get(name);
    if (number === undefined) {
      if (!values.has(name)) {
        throw new InvalidParameterError(
          `Query parameter $${name} has no value; add "${name}" to the "parameters" object.`,
        );
      }
      params.push(values.get(name) as T);
      number = params.length;
      numbers.set(name, number);
    }
    out += `${sql.slice(copied, token.start)}$${number}`;
    copied = token.end as number;
  }
  return { sql: out + sql.slice(copied), params };
}
