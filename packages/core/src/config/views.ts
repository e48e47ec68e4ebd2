/**
 * The spicepod's `views`: Spice's `View` (crates/spicepod `component/view.rs`) — a `name`, an
 * optional `description`, the SQL inline (`sql`) or in a file beside the spicepod (`sql_ref`), and
 * `dependsOn`. A view's problems fail only that view (the pod and its datasets still serve); what
 * its SQL reads and whether the engine accepts it are decided when the view is created in the
 * namespace, with the same statement checks as a query.
 */
import { SPICEPOD_NAME } from '../location.js';
import { type IssueSink, Reporter } from './issues.js';
import type { FileReader } from './secrets.js';
import type { ViewConfig } from './types.js';
import { isMap, readText } from './values.js';

const VIEW_KEYS = ['name', 'description', 'sql', 'sql_ref', 'dependsOn', 'metadata'];

/** Reads `views`; `datasets` are the names of every dataset entry (valid or not). */
export function readViews(
  pod: Reporter,
  sink: IssueSink,
  list: unknown,
  datasets: readonly string[],
  readFile: FileReader | undefined,
): ViewConfig[] {
  if (list === undefined || list === null) return [];
  if (!Array.isArray(list)) {
    pod.error('views', 'must be a list of views, such as [{ name: big_orders, sql: SELECT … }]');
    return [];
  }
  const drafts = list.map((entry, index) => readView(new Reporter(sink, false), index, entry, readFile));
  const datasetNames = new Set(datasets.map((name) => name.toLowerCase()));
  const viewNames = new Map<string, number[]>();
  for (const draft of drafts) {
    if (draft.name === undefined) continue;
    const lower = draft.name.toLowerCase();
    viewNames.set(lower, [...(viewNames.get(lower) ?? []), draft.index]);
  }
  const known = new Set([...datasetNames, ...viewNames.keys()]);
  for (const draft of drafts) {
    if (draft.name === undefined) continue;
    const at = `views[${draft.index}].name`;
    const lower = draft.name.toLowerCase();
    if (datasetNames.has(lower)) {
      draft.report.error(
        at,
        `'${draft.name}' is also the name of a dataset; give the view a name of its own`,
      );
    }
    const sharing = viewNames.get(lower) ?? [];
    if (sharing.length > 1) {
      draft.report.error(
        at,
        `'${draft.name}' names ${sharing.map((index) => `views[${index}]`).join(' and ')}; give each view a unique name`,
      );
    }
    draft.dependsOn.forEach((name, position) => {
      if (!known.has(name.toLowerCase())) {
        draft.report.error(
          `views[${draft.index}].dependsOn[${position}]`,
          `'${name}' names no dataset or view of this spicepod; name one, or remove it`,
        );
      }
    });
  }
  return drafts.flatMap((draft) =>
    draft.report.failed || draft.name === undefined || draft.sql === undefined
      ? []
      : [
          {
            name: draft.name,
            index: draft.index,
            ...(draft.description === undefined ? {} : { description: draft.description }),
            sql: draft.sql,
            dependsOn: draft.dependsOn,
          },
        ],
  );
}

interface ViewDraft {
  readonly index: number;
  readonly report: Reporter;
  readonly name?: string;
  readonly description?: string;
  readonly sql?: string;
  readonly dependsOn: readonly string[];
}

function readView(
  report: Reporter,
  index: number,
  entry: unknown,
  readFile: FileReader | undefined,
): ViewDraft {
  const base = `views[${index}]`;
  if (!isMap(entry)) {
    report.error(base, 'must be a map with a name and its sql (or sql_ref)');
    return { index, report, dependsOn: [] };
  }
  let name: string | undefined;
  if (entry.name === undefined || entry.name === null) {
    report.error(`${base}.name`, 'missing; give the view a name (letters, digits and underscores)');
  } else {
    const text = readText(report, `${base}.name`, entry.name);
    if (text !== undefined && !SPICEPOD_NAME.test(text)) {
      report.error(
        `${base}.name`,
        `'${text}' is not a safe view name; use up to 128 letters, digits and underscores`,
      );
    } else if (text !== undefined) {
      name = text;
      report.nameView(text);
    }
  }
  for (const key of Object.keys(entry)) {
    if (!VIEW_KEYS.includes(key)) report.unknownKey(`${base}.${key}`, key, VIEW_KEYS);
  }
  const description =
    entry.description === undefined || entry.description === null
      ? undefined
      : readText(report, `${base}.description`, entry.description);
  const sql = readSql(report, base, entry, readFile);
  const dependsOn: string[] = [];
  const depends = entry.dependsOn;
  if (depends !== undefined && depends !== null) {
    if (!Array.isArray(depends)) report.error(`${base}.dependsOn`, 'must be a list of dataset or view names');
    else {
      depends.forEach((item, position) => {
        const text = readText(report, `${base}.dependsOn[${position}]`, item);
        if (text !== undefined) dependsOn.push(text);
      });
    }
  }
  return {
    index,
    report,
    ...(name === undefined ? {} : { name }),
    ...(description === undefined ? {} : { description }),
    ...(sql === undefined ? {} : { sql }),
    dependsOn,
  };
}

function readSql(
  report: Reporter,
  base: string,
  entry: Record<string, unknown>,
  readFile: FileReader | undefined,
): string | undefined {
  const hasSql = entry.sql !== undefined && entry.sql !== null;
  const hasRef = entry.sql_ref !== undefined && entry.sql_ref !== null;
  if (hasSql && hasRef) {
    report.error(base, 'sets both sql and sql_ref; keep one (the SQL, or the file holding it)');
    return undefined;
  }
  if (!hasSql && !hasRef) {
    report.error(
      `${base}.sql`,
      'missing; give the view its SELECT statement as sql, or a file holding it as sql_ref',
    );
    return undefined;
  }
  let sql: string | undefined;
  if (hasSql) {
    if (typeof entry.sql !== 'string') {
      report.error(`${base}.sql`, 'must be the SQL text of one SELECT statement');
      return undefined;
    }
    sql = entry.sql;
  } else {
    const ref = readText(report, `${base}.sql_ref`, entry.sql_ref);
    if (ref === undefined) return undefined;
    const read = readFile?.(ref) ?? { problem: 'no file can be read here' };
    if (read.text === undefined) {
      report.error(
        `${base}.sql_ref`,
        `'${ref}' cannot be read (${read.problem}); give the path (beside the spicepod) of a file holding the view's SELECT statement`,
      );
      return undefined;
    }
    sql = read.text;
  }
  const trimmed = sql.trim().replace(/;\s*$/, '').trim();
  if (trimmed === '') {
    report.error(hasSql ? `${base}.sql` : `${base}.sql_ref`, "is empty; give the view's SELECT statement");
    return undefined;
  }
  return trimmed;
}
