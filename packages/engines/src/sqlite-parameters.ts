/**
 * The types of an SQLite statement's parameters, read from its program (`EXPLAIN`): SQLite has no
 * parameter types of its own, and Arrow's JDBC driver binds a value only to a typed parameter
 * (Flight's CreatePreparedStatement answers them; Spice's DataFusion types them from the tables).
 * A parameter takes the declared type of the column the program compares it with or seeks it as
 * (`WHERE id = ?`, `name IN (?, ?)`, an index seek), Int64 where it must be an integer (`LIMIT ?`),
 * else the type of the affinity the comparison applies (`WHERE score > ?`), else none (`SELECT ?`).
 * Pure: the program's rows and the columns of what its cursors open come in.
 */
import type { ArrowDataType } from '@ferry/core/base';
import { sqliteDeclaredTypeToArrow } from './sqlite-types.js';

/** One row of `EXPLAIN` (better-sqlite3 names the columns so). */
export interface ProgramStep {
  readonly opcode: string;
  readonly p1: number;
  readonly p2: number;
  readonly p3: number;
  readonly p4: unknown;
  readonly p5: number;
}

/**
 * The declared types of what a cursor opened (`OpenRead`'s database and root page), in the order the
 * program numbers them: a table's columns, or an index's columns and then the rowid (`INTEGER`);
 * `null` for a column declared with no type; undefined when the cursor is neither.
 */
export type CursorColumns = (database: number, rootPage: number) => readonly (string | null)[] | undefined;

/** The comparisons whose P1 and P3 are the registers compared, with the affinity in P5. */
const COMPARISONS: ReadonlySet<string> = new Set(['Eq', 'Ne', 'Lt', 'Le', 'Gt', 'Ge']);
/** Seeks on a cursor with a key of P4 registers from P3 (an index's leading columns, in order). */
const KEY_SEEKS: ReadonlySet<string> = new Set([
  'SeekGE',
  'SeekGT',
  'SeekLE',
  'SeekLT',
  'IdxGE',
  'IdxGT',
  'IdxLE',
  'IdxLT',
  'Found',
  'NotFound',
  'NoConflict',
]);

/** Opcodes that write a value into register P2 (`Column` writes P3). */
const WRITES_P2: ReadonlySet<string> = new Set([
  'Integer',
  'Int64',
  'Real',
  'String8',
  'String',
  'Null',
  'Copy',
  'SCopy',
  'Rowid',
  'IdxRowid',
]);

/** SQLite's affinity letters (`SQLITE_AFF_*`, P5's low bits and `Affinity`'s P4) to Arrow types. */
function affinityType(letter: string | undefined): ArrowDataType | undefined {
  switch (letter) {
    case 'B':
      return 'Utf8';
    case 'D':
      return 'Int64';
    case 'E':
      return 'Float64';
    default:
      // 'A' (BLOB: no conversion) and 'C' (NUMERIC: integer or real, whichever the text reads as).
      return undefined;
  }
}

const declared = (type: string | null | undefined): ArrowDataType | undefined =>
  type === null || type === undefined ? undefined : sqliteDeclaredTypeToArrow(type);

/** One type per parameter (`?NNN` numbering, 1 first), `null` where the program says nothing. */
export function sqliteParameterTypes(
  program: readonly ProgramStep[],
  count: number,
  columnsOf: CursorColumns,
): (ArrowDataType | null)[] {
  // Parameters are most often read once, into registers of their own, by `Variable`s at the end of
  // the program that run first (its `Init` jumps there): known before the pass below.
  const parameterIn = new Map<number, number>();
  for (const step of program) if (step.opcode === 'Variable') parameterIn.set(step.p2, step.p1);
  const found = new Map<number, ArrowDataType>();
  const fallback = new Map<number, ArrowDataType>();
  const settle = (register: number, type: ArrowDataType | undefined, into = found): void => {
    const parameter = parameterIn.get(register);
    if (parameter !== undefined && type !== undefined && !into.has(parameter)) into.set(parameter, type);
  };
  const cursors = new Map<number, readonly (string | null)[]>();
  // What a register holds now: a column's declared type (null: declared with none), as the program
  // runs in address order (a loop's body reads its columns before it compares them).
  const column = new Map<number, string | null>();
  for (const step of program) {
    const { opcode, p1, p2, p3 } = step;
    // A register a parameter was read into holds something else once another value is written
    // there (a temporary reused in a loop; the registers of hoisted parameters are their own).
    const written = opcode === 'Column' ? p3 : WRITES_P2.has(opcode) ? p2 : undefined;
    if (written !== undefined) parameterIn.delete(written);
    if (opcode === 'Variable') {
      parameterIn.set(p2, p1);
    } else if (opcode === 'OpenRead' || opcode === 'ReopenIdx') {
      const columns = columnsOf(p3, p2);
      if (columns === undefined) cursors.delete(p1);
      else cursors.set(p1, columns);
    } else if (opcode === 'Column') {
      const type = cursors.get(p1)?.[p2];
      if (type === undefined) column.delete(p3);
      else column.set(p3, type);
    } else if (opcode === 'Rowid' || opcode === 'IdxRowid') {
      column.set(p2, 'INTEGER');
    } else if (COMPARISONS.has(opcode)) {
      for (const [parameter, other] of [
        [p1, p3],
        [p3, p1],
      ] as const) {
        if (!parameterIn.has(parameter)) continue;
        if (column.has(other)) settle(parameter, declared(column.get(other)));
        settle(parameter, affinityType(String.fromCharCode(step.p5 & 0x47)), fallback);
      }
    } else if (opcode === 'SeekRowid' || opcode === 'NotExists') {
      settle(p3, 'Int64');
    } else if (KEY_SEEKS.has(opcode)) {
      const keys = typeof step.p4 === 'number' ? step.p4 : Number(step.p4);
      const columns = cursors.get(p1);
      for (let index = 0; columns !== undefined && index < keys; index++) {
        settle(p3 + index, declared(columns[index]));
      }
    } else if ((opcode === 'Affinity' || opcode === 'MakeRecord') && typeof step.p4 === 'string') {
      // `Affinity` before an index seek; `MakeRecord` of an IN list's values (an ephemeral index).
      for (let index = 0; index < p2; index++) settle(p1 + index, affinityType(step.p4[index]), fallback);
    } else if (opcode === 'MustBeInt') {
      settle(p1, 'Int64');
    }
  }
  return Array.from({ length: count }, (_, index) => found.get(index + 1) ?? fallback.get(index + 1) ?? null);
}
