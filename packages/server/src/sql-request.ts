/**
 * The body of `POST /v1/sql`: the SQL itself (`text/plain`, or any type that is not JSON, so
 * `curl -d` works), or Spice's JSON `{ "sql": "…", "parameters": … }` where `parameters` is a list
 * (positional `?`, `$1`, `$2`, …) or an object of named values (`$name`, numbered here by
 * `numberNamedParameters`). Ferry's `params` (a list) stays as an alias. The JSON schema checks the
 * shape; this turns it into the statement and the values the runtime binds.
 */
import type { JsonValue } from '@ferry/core/base';
import { numberNamedParameters, type SqlDialect } from '@ferry/engines/sql';
import { BadRequestError } from './errors.js';

/** How to send a `POST /v1/sql` body, for error messages. */
export const SQL_BODY_HINT =
  'send { "sql": "SELECT …", "parameters": [] } as application/json, or the SQL itself as text/plain';

/** The JSON schema of the body: the SQL as a string, or the JSON object. */
export const SQL_BODY_SCHEMA = {
  anyOf: [
    { type: 'string' },
    {
      type: 'object',
      required: ['sql'],
      properties: {
        sql: { type: 'string' },
        parameters: { type: ['array', 'object'] },
        params: { type: 'array' },
      },
    },
  ],
} as const;

/** A JSON string, or a JSON number. */
const JSON_TOKEN = /"(?:[^"\\]|\\.)*"|-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?/g;

/**
 * The JSON `text` with every integer a JSON number cannot carry exactly (outside its strings)
 * written as a string of its digits: `JSON.parse` would read it as a neighbouring double, so a
 * parameter would bind another value (and select other rows) than the client sent, where Spice's
 * serde reads it exactly. As a string it binds exactly wherever the statement gives it a type
 * (`WHERE id = $1`, `IN`, `LIMIT`, a cast) — as Flight's Int64 parameters past 2^53 do — and
 * answers the same JSON text (such an integer is written as a string). Unchanged when there is none.
 */
export function exactJsonText(text: string): string {
  if (!/\d{16}/.test(text)) return text;
  return text.replace(JSON_TOKEN, (token) =>
    !token.startsWith('"') && /^-?\d{16,}$/.test(token) && BigInt(Number(token)) !== BigInt(token)
      ? `"${token}"`
      : token,
  );
}

export interface SqlRequest {
  readonly sql: string;
  readonly params: readonly JsonValue[];
}

interface SqlJsonBody {
  readonly sql: string;
  readonly parameters?: readonly JsonValue[] | Readonly<Record<string, JsonValue>>;
  readonly params?: readonly JsonValue[];
}

/**
 * The statement and its positional values. `dialect` says how the runtime's statements tokenize
 * (it matters only for named parameters).
 */
export function parseSqlRequest(body: unknown, dialect: (sql: string) => SqlDialect): SqlRequest {
  if (typeof body !== 'object' || body === null) {
    const sql = typeof body === 'string' ? body : '';
    if (sql.trim() === '') {
      throw new BadRequestError('The /v1/sql body holds no SQL; send one SELECT statement as the body.');
    }
    return { sql, params: [] };
  }
  const { sql, parameters, params } = body as SqlJsonBody;
  if (sql.trim() === '') {
    throw new BadRequestError(`The /v1/sql JSON body has an empty "sql"; ${SQL_BODY_HINT}.`);
  }
  if (parameters !== undefined && params !== undefined) {
    throw new BadRequestError(
      'The /v1/sql JSON body has both "parameters" and "params"; send the values once, as "parameters".',
    );
  }
  const values = parameters ?? params ?? [];
  if (Array.isArray(values)) return { sql, params: values };
  return numberNamedParameters(sql, values as Readonly<Record<string, JsonValue>>, dialect(sql));
}
