/**
 * Arrow-JSON schema compatibility, the rule the spec uses before download: same fields in the same
 * order with the same name, data type and nullability; field metadata and dictionary ids ignored.
 */
import type { ArrowDataType, ArrowField, ArrowSchema } from './types.js';

/** A stable text form of a data type, used both for comparison and for messages. */
export function formatDataType(type: ArrowDataType): string {
  return typeof type === 'string' ? type : canonicalJson(type);
}

function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>)
      .filter(([key]) => key !== 'metadata' && key !== 'dict_id' && key !== 'dict_is_ordered')
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(',')}}`;
  }
  return JSON.stringify(value);
}

function describeField(field: ArrowField): string {
  return `${field.name} ${formatDataType(field.data_type)}${field.nullable ? '' : ' NOT NULL'}`;
}

/**
 * Returns `undefined` when the schemas are compatible, else one sentence naming the first
 * difference (e.g. `field 2 is 'amount Float64', expected 'amount {"Decimal128":[18,2]}'`).
 */
export function schemaDifference(expected: ArrowSchema, actual: ArrowSchema): string | undefined {
  const count = Math.max(expected.fields.length, actual.fields.length);
  for (let i = 0; i < count; i++) {
    const want = expected.fields[i];
    const got = actual.fields[i];
    if (want === undefined && got !== undefined) return `unexpected extra field ${i} '${describeField(got)}'`;
    if (got === undefined && want !== undefined) return `missing field ${i} '${describeField(want)}'`;
    if (want === undefined || got === undefined) continue;
    if (
      want.name !== got.name ||
      want.nullable !== got.nullable ||
      formatDataType(want.data_type) !== formatDataType(got.data_type)
    ) {
      return `field ${i} is '${describeField(got)}', expected '${describeField(want)}'`;
    }
  }
  return undefined;
}

export function schemasCompatible(expected: ArrowSchema, actual: ArrowSchema): boolean {
  return schemaDifference(expected, actual) === undefined;
}
