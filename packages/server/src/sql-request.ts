/**
 * The body of `POST /v1/sql`: the SQL itself (`text/plain`, or any type that is not JSON, so
 * `curl -d` works), or Spice's JSON `{ "sql": "…", "parameters": … }` where `parameters` is a list
 * (positional `?`, `$1`, `$2`, …) or an object of named values (`$name`, numbered here by
 * `numberNamedParameters`). Ferry's `params` (a list) stays as an alias. The JSON schema checks the
 * shape; this turns it into the statement and the values the runtime binds.
 */
import { randomUUID } from 'node:crypto';
import type { QueryParam } from '@ferry/core/base';
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

/** A JSON body to parse and what turns the parsed value into the one sent ({@link exactJson}). */
export interface ExactJson {
  readonly text: string;
  revive(parsed: unknown): unknown;
}

const AS_PARSED: ExactJson['revive'] = (parsed) => parsed;

/**
 * A JSON body read exactly: every integer past ±(2^53−1) (outside its strings) is a `bigint`.
 * `JSON.parse` would read it as a double (a neighbouring one, or one that binds as DOUBLE), so a
 * parameter would bind another value (and select other rows) than the client sent, or be no
 * integer in `$1 + 1`, where Spice's serde reads it exactly. `text` has each written as a string
 * of its digits behind a mark made for this body (no client can send it); `revive` turns those
 * strings back into the integers. A string of digits the client sent stays a string.
 */
export function exactJson(text: string): ExactJson {
  if (!/\d{16}/.test(text)) return { text, revive: AS_PARSED };
  const mark = `\u0000${randomUUID()}:`;
  let marked = false;
  const rewritten = text.replace(JSON_TOKEN, (token) => {
    if (token.startsWith('"') || !/^-?\d{16,}$/.test(token) || Number.isSafeInteger(Number(token)))
      return token;
    marked = true;
    return `"\\u0000${mark.slice(1)}${token}"`;
  });
  if (!marked) return { text, revive: AS_PARSED };
  const revive = (value: unknown): unknown => {
    if (typeof value === 'string') return value.startsWith(mark) ? BigInt(value.slice(mark.length)) : value;
    if (Array.isArray(value)) return value.map(revive);
    if (typeof value !== 'object' || value === null) return value;
    return Object.fromEntries(Object.entries(value).map(([key, item]) => [key, revive(item)]));
  };
  return { text: rewritten, revive };
}

/** Whether a text body is the JSON form (`{ "sql": … }`), which no SQL statement is. */
function isJsonSqlBody(text: string): boolean {
  if (!text.trimStart().startsWith('{')) return false;
  try {
    const value: unknown = JSON.parse(text);
    return typeof value === 'object' && value !== null && 'sql' in value;
  } catch {
    return false;
  }
}

export interface SqlRequest {
  readonly sql: string;
  readonly params: readonly QueryParam[];
}

interface SqlJsonBody {
  readonly sql: string;
  readonly parameters?: readonly QueryParam[] | Readonly<Record<string, QueryParam>>;
  readonly params?: readonly QueryParam[];
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
    if (isJsonSqlBody(sql)) {
      throw new BadRequestError(
        'The /v1/sql body is a JSON object, but its Content-Type is not JSON, so it was read as the SQL itself; send it with Content-Type: application/json (or send the SQL itself as text/plain).',
      );
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
  return numberNamedParameters(sql, values as Readonly<Record<string, QueryParam>>, dialect(sql));
}
