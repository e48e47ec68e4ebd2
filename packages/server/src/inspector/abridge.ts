/**
 * Size caps for inspection payloads. An event can carry a whole metadata.json (a full read's
 * output) or a snapshot's schema; a page or a relay needs the event's type and its small fields,
 * not megabytes per poll. `abridge` keeps a value whole when its JSON fits the budget and
 * otherwise keeps its small fields and replaces the large ones with a note of their size.
 */
import type { JsonValue } from '@ferry/core/base';

/** Below this budget a large object is not opened up: it becomes a size note. */
const MIN_OPENED_BUDGET = 128;

/** A value of at most about `budget` characters of JSON (large members become `"… 12.3 KB"`). */
export function abridge(value: JsonValue, budget: number): JsonValue {
  const text = JSON.stringify(value);
  if (text.length <= budget) return value;
  if (value === null || typeof value !== 'object' || budget < MIN_OPENED_BUDGET) return sizeNote(text.length);
  const memberBudget = Math.max(64, Math.floor(budget / 8));
  let used = 2;
  if (Array.isArray(value)) {
    const kept: JsonValue[] = [];
    for (const item of value) {
      const small = abridge(item, memberBudget);
      used += JSON.stringify(small).length + 1;
      if (used > budget) {
        kept.push(`… ${value.length - kept.length} more`);
        break;
      }
      kept.push(small);
    }
    return kept;
  }
  const kept: { [key: string]: JsonValue } = {};
  const entries = Object.entries(value);
  for (const [index, [key, member]] of entries.entries()) {
    const small = abridge(member, memberBudget);
    used += key.length + JSON.stringify(small).length + 4;
    if (used > budget) {
      kept['…'] = `${entries.length - index} more`;
      break;
    }
    kept[key] = small;
  }
  return kept;
}

function sizeNote(chars: number): string {
  return chars < 1024 ? `… ${chars} B` : `… ${(chars / 1024).toFixed(1)} KB`;
}
