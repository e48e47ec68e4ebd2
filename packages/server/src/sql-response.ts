/**
 * The answer of `POST /v1/sql` in the format the `Accept` header picks, as Spice offers them:
 * `application/json` (the default: an array of row objects), `application/vnd.spiceai.sql.v1+json`
 * (`{ row_count, schema: { fields }, data }`, the schema being the result's Arrow schema in the
 * JSON shape metadata.json uses), `text/csv` and `text/plain` (a table for people). An `Accept`
 * naming none of them gets JSON, as Spice answers it.
 */
import type { ArrowField } from '@ferry/core';
import { arrowField, resultColumnArrowType } from '@ferry/engines';
import type { RuntimeQueryResult } from '@ferry/runtime';
import { toCsv, toTextTable } from './formats.js';

export const SQL_MEDIA_TYPES = [
  'application/json',
  'application/vnd.spiceai.sql.v1+json',
  'text/csv',
  'text/plain',
] as const;

export type SqlMediaType = (typeof SQL_MEDIA_TYPES)[number];

/**
 * The result's Arrow schema. Result columns carry no nullability, so every field is nullable; a
 * type outside the snapshot-store type table (HUGEINT, UUID, ENUM, …) is reported as `Utf8`.
 */
export function resultSchema(result: RuntimeQueryResult): { fields: ArrowField[] } {
  return {
    fields: result.columns.map((column) =>
      arrowField(column.name, resultColumnArrowType(result.engine, column.type) ?? 'Utf8', true),
    ),
  };
}

export interface RenderedResult {
  readonly contentType: string;
  readonly body: string;
}

export function renderResult(result: RuntimeQueryResult, type: SqlMediaType): RenderedResult {
  const columns = result.columns.map((column) => column.name);
  switch (type) {
    case 'application/vnd.spiceai.sql.v1+json':
      return {
        contentType: type,
        body: JSON.stringify({
          row_count: result.rows.length,
          schema: resultSchema(result),
          data: result.rows,
        }),
      };
    case 'text/csv':
      return { contentType: 'text/csv; charset=utf-8', body: toCsv(columns, result.rows) };
    case 'text/plain':
      return { contentType: 'text/plain; charset=utf-8', body: toTextTable(columns, result.rows) };
    default:
      return { contentType: 'application/json; charset=utf-8', body: JSON.stringify(result.rows) };
  }
}
