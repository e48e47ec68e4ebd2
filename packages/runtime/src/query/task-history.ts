/**
 * Spice's task history (`runtime.task_history`, on by default): every query the runtime runs is a
 * row of `spice.runtime.task_history` — Spice's columns: trace and span ids, `task` (`sql_query`),
 * `input` (the statement), `captured_output` (with `captured_output: truncated`, the first rows of
 * a JSON answer, cut at 1 KiB), start and end times, `execution_duration_ms`, `error_message` and
 * `labels` (the datasets read, the engine, the cache's part, the rows answered). The host keeps the
 * rows — at most `retention_period` old, removed every `retention_check_interval`, and never more
 * than {@link MAX_TASK_ROWS} nor {@link MAX_TASK_BYTES} — and hands them to the DuckDB workers
 * before a query that reads them, so the table is queried like any other (DuckDB's SQL, any
 * client). Time is injected.
 */
import { randomBytes } from 'node:crypto';
import type { TaskHistoryConfig } from '@ferry/core/base';
import type { NamespaceTaskHistory, TaskHistoryRow } from '@ferry/engines';

/** Rows kept at most, whatever the retention (the oldest go first). */
export const MAX_TASK_ROWS = 10_000;
/** The memory the rows' texts may take, whatever the retention (the oldest go first). */
export const MAX_TASK_BYTES = 32 * 1024 * 1024;
/** The longest statement text kept in `input`, and error text in `error_message`. */
const MAX_INPUT_CHARS = 16_384;
/** What a row costs beyond its texts (its object, labels and numbers). */
const ROW_BYTES = 512;
const MAX_CAPTURED_CHARS = 1_024;
/** Rows of a JSON answer captured with `captured_output: truncated`. */
const CAPTURED_ROWS = 3;

export interface FinishedTask {
  readonly sql: string;
  /** Milliseconds since the epoch. */
  readonly startMs: number;
  readonly durationMs: number;
  readonly error?: unknown;
  readonly labels: Readonly<Record<string, string>>;
  /** The rows of a JSON answer, when there is one (for `captured_output: truncated`). */
  readonly rows?: readonly unknown[] | undefined;
}

type Mutable<T> = { -readonly [K in keyof T]: T[K] };

/**
 * The first `max` characters of `text`, as a string of their own. V8's `slice` of a long string is
 * a view that keeps the whole string alive: a row keeping the first 16 KiB of a 250 KB statement
 * kept all 250 KB, and 10,000 such rows 2.5 GB. A copy (`structuredClone`) keeps only the prefix.
 */
function ownPrefix(text: string, max: number): string {
  return text.length > max ? structuredClone(text.slice(0, max)) : text;
}

/** The memory a row keeps: its texts (UTF-16 at most) and {@link ROW_BYTES}. */
function weight(row: TaskHistoryRow): number {
  const texts = row.input.length + (row.captured_output?.length ?? 0) + (row.error_message?.length ?? 0);
  return ROW_BYTES + 2 * texts;
}

export class TaskHistory {
  readonly #config: TaskHistoryConfig;
  readonly #now: () => number;
  /** The rows, their ids made when first handed over (not on a query's path). */
  #rows: Mutable<TaskHistoryRow>[] = [];
  /** What the rows weigh ({@link weight}), bounded by {@link MAX_TASK_BYTES}. */
  #bytes = 0;
  #version = 1;
  #synced = 0;
  readonly #timer: NodeJS.Timeout | undefined;

  constructor(config: TaskHistoryConfig, now: () => number = Date.now) {
    this.#config = config;
    this.#now = now;
    if (config.enabled) {
      this.#timer = setInterval(() => this.prune(), config.retentionCheckIntervalMs);
      this.#timer.unref();
    }
  }

  get enabled(): boolean {
    return this.#config.enabled;
  }

  /** Records one finished query. */
  record(task: FinishedTask): void {
    if (!this.#config.enabled) return;
    const captured =
      this.#config.capturedOutput === 'truncated' && task.rows !== undefined
        ? ownPrefix(JSON.stringify(task.rows.slice(0, CAPTURED_ROWS)), MAX_CAPTURED_CHARS)
        : null;
    const row: Mutable<TaskHistoryRow> = {
      trace_id: '',
      span_id: '',
      parent_span_id: null,
      task: 'sql_query',
      input: ownPrefix(task.sql, MAX_INPUT_CHARS),
      captured_output: captured,
      start_us: Math.round(task.startMs * 1000),
      end_us: Math.round((task.startMs + task.durationMs) * 1000),
      execution_duration_ms: task.durationMs,
      error_message:
        task.error === undefined
          ? null
          : ownPrefix(task.error instanceof Error ? task.error.message : String(task.error), MAX_INPUT_CHARS),
      labels: task.labels,
    };
    this.#rows.push(row);
    this.#bytes += weight(row);
    // The oldest out (V8 trims an array's front in place: no copy per query).
    while (this.#rows.length > MAX_TASK_ROWS || (this.#bytes > MAX_TASK_BYTES && this.#rows.length > 1)) {
      this.#bytes -= weight(this.#rows.shift() as TaskHistoryRow);
    }
    this.#version++;
  }

  /** Removes the rows older than `retention_period`. */
  prune(): void {
    const oldest = (this.#now() - this.#config.retentionPeriodMs) * 1000;
    const kept = this.#rows.filter((row) => row.start_us >= oldest);
    if (kept.length === this.#rows.length) return;
    this.#rows = kept;
    this.#bytes = kept.reduce((sum, row) => sum + weight(row), 0);
    this.#version++;
  }

  /** The rows as they are now, unless the workers were handed this version already (`sent`). */
  changed(): NamespaceTaskHistory | undefined {
    this.prune();
    if (this.#version === this.#synced) return undefined;
    for (const row of this.#rows) {
      if (row.trace_id !== '') continue;
      row.trace_id = randomBytes(16).toString('hex');
      row.span_id = randomBytes(8).toString('hex');
    }
    return { version: this.#version, rows: [...this.#rows] };
  }

  /** The workers have been handed `history`. */
  sent(history: NamespaceTaskHistory): void {
    this.#synced = history.version;
  }

  close(): void {
    clearInterval(this.#timer);
  }
}
