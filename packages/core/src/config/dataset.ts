/**
 * One entry of `datasets`: the two Spice declarations of a snapshot reader
 * (`acceleration.refresh_mode: snapshot` over the pod's `snapshots.location`, and
 * `from: s3://…` with `params.file_format: snapshot`), validated key by key. Every problem is
 * reported against the dataset, so a bad dataset fails only itself. Checks that span datasets
 * (duplicate names, shared files, the notification queue) are done by the loader.
 */

import { ENGINE_NAMES, type EngineName, fileFormatOf } from '../engines.js';
import { type Location, parseLocation, SPICEPOD_NAME } from '../location.js';
import { parseByteSize } from './byte-size.js';
import { closest, type Reporter } from './issues.js';
import { readS3Params, S3_PARAM_KEYS } from './s3-params.js';
import type { SecretSource } from './secrets.js';
import { readTrustedKeys, TRUSTED_KEYS_PARAM } from './trusted-keys.js';
import type {
  BootstrapOnFailure,
  DatasetConfig,
  DatasetForm,
  QueryLimits,
  Retention,
  S3Settings,
  SnapshotsMode,
  TrustedKey,
} from './types.js';
import {
  didYouMean,
  isMap,
  listOr,
  readBoolean,
  readChoice,
  readDuration,
  readParam,
  readText,
} from './values.js';

export const DEFAULT_REFRESH_CHECK_INTERVAL_MS = 60_000;

/** What a `refresh_mode: snapshot` dataset takes from the pod's `snapshots` block. */
export interface PodSnapshots {
  readonly enabled: boolean;
  /** Absent when not set, or when invalid (already reported as fatal). */
  readonly location?: Location;
  readonly locationBroken: boolean;
  readonly bootstrapOnFailure: BootstrapOnFailure;
  readonly s3?: S3Settings;
  /** `snapshots.params.ferry_trusted_keys`, when set and valid. */
  readonly trustedKeys?: readonly TrustedKey[];
  /** `snapshots.params.ferry_max_staleness`: every dataset's bound unless its own param sets one. */
  readonly maxStalenessMs?: number;
  /** `snapshots.params.ferry_retain_snapshots`: every dataset's count unless its own param sets one. */
  readonly retainSnapshots?: number;
  /** `snapshots.params.ferry_retain_disk_budget`: every dataset's budget unless its own param sets one. */
  readonly retainDiskBudgetBytes?: number;
}

/** A dataset as read: `config` is present only when the dataset has no error of its own. */
export interface DatasetDraft {
  readonly index: number;
  readonly report: Reporter;
  readonly name?: string;
  readonly form?: DatasetForm;
  /** The live-file param as written, for the shared-file check. */
  readonly live?: LiveFile;
  readonly config?: DatasetConfig;
}

const SNAPSHOT_ENGINES: readonly EngineName[] = ENGINE_NAMES;
const NON_FILE_ENGINES = ['arrow', 'postgres'];
const UNSUPPORTED_ENGINES = ['cayenne'];

/** `mode` is Spice's older name for `access` (a serde alias in its Dataset struct). */
const DATASET_KEYS = ['from', 'name', 'params', 'acceleration', 'ref', 'access', 'mode'];
/** Spice's dataset access modes (crates/spicepod component/access.rs). */
const ACCESS_MODES = ['read', 'read_write', 'read_write_create'];
/** Spice dataset keys that describe the source or the catalog; recorded nowhere, harmless. */
const DATASET_DESCRIPTIVE_KEYS = [
  'description',
  'metadata',
  'columns',
  'time_column',
  'time_format',
  'time_partition_column',
  'time_partition_format',
  'unsupported_type_action',
  'ready_state',
  'metrics',
  'check_availability',
  'replication',
  'dependsOn',
  'has_metadata_table',
  'invalid_type_action',
];
/** Spice dataset keys that compute from a source; a snapshot reader cannot. */
const DATASET_COMPUTED_KEYS = ['embeddings', 'vectors', 'full_text_search'];
const KNOWN_DATASET_KEYS = [...DATASET_KEYS, ...DATASET_DESCRIPTIVE_KEYS, ...DATASET_COMPUTED_KEYS];

const ACCELERATION_KEYS = [
  'enabled',
  'engine',
  'mode',
  'refresh_mode',
  'refresh_check_interval',
  'snapshots',
  'params',
];
/** Writer-side snapshot settings: a reader never creates snapshots. */
const SNAPSHOT_WRITER_KEYS = [
  'snapshots_trigger',
  'snapshots_trigger_threshold',
  'snapshots_compaction',
  'snapshots_reset_expiry_on_load',
  'snapshots_creation_policy',
];
/** Spice acceleration keys that shape data a snapshot reader serves as published. */
const DATA_SHAPING_KEYS = [
  'refresh_sql',
  'retention_period',
  'retention_sql',
  'retention_check_enabled',
  'retention_check_interval',
];
const OTHER_ACCELERATION_KEYS = [
  'refresh_data_window',
  'refresh_append_overlap',
  'refresh_retry_enabled',
  'refresh_retry_max_attempts',
  'refresh_on_startup',
  'refresh_jitter_enabled',
  'refresh_jitter_max',
  'refresh_cron',
  'indexes',
  'primary_key',
  'on_conflict',
  'engine_secret',
  'on_zero_results',
  'storage_profile',
  'partition_by',
  'ready_state',
  'maintained_aggregates',
  'write_mode',
  'metrics',
];
const KNOWN_ACCELERATION_KEYS = [
  ...ACCELERATION_KEYS,
  ...SNAPSHOT_WRITER_KEYS,
  ...DATA_SHAPING_KEYS,
  ...OTHER_ACCELERATION_KEYS,
];
const REFRESH_MODES = ['full', 'append', 'changes', 'caching', 'snapshot'];
const SNAPSHOT_BEHAVIOURS = ['enabled', 'bootstrap_only', 'create_only', 'disabled'];
/** What a reader's `acceleration.snapshots` may say. */
const READER_SNAPSHOT_BEHAVIOURS = ['enabled', 'bootstrap_only'];
const ACCELERATION_MODES = ['memory', 'file'];
/** Spice's `params.file_format` values; only `snapshot` is served here. */
const FILE_FORMATS = ['snapshot', 'parquet', 'csv', 'json', 'jsonl', 'delta', 'iceberg'];

/** The live-file params Spice names per engine (Turso also accepts `sqlite_file`: its file is SQLite-format). */
const FILE_PARAMS: Readonly<Record<EngineName, readonly string[]>> = {
  duckdb: ['duckdb_file'],
  sqlite: ['sqlite_file'],
  turso: ['turso_file', 'sqlite_file'],
};
const ALL_FILE_PARAMS = ['duckdb_file', 'sqlite_file', 'turso_file'];
/** Params that choose where the engine's data lives; the runtime decides that for a snapshot dataset. */
const PLACEMENT_PARAMS = ['duckdb_data_dir'];
/** Spice's DuckDB limits, which bound the queries that read the dataset. */
const LIMIT_PARAMS = ['duckdb_memory_limit', 'duckdb_threads'];
/** Spice engine tuning params: recorded as ignored (the limits above are read). */
const TUNING_PARAMS: Readonly<Record<EngineName, readonly string[]>> = {
  duckdb: [
    ...LIMIT_PARAMS,
    'duckdb_preserve_insertion_order',
    'duckdb_index_scan_percentage',
    'duckdb_index_scan_max_count',
    'connection_pool_size',
    'on_refresh_recompute_statistics',
    'on_refresh_sort_columns',
    'on_full_refresh',
    'optimizer_duckdb_aggregate_pushdown',
  ],
  sqlite: ['busy_timeout'],
  turso: ['turso_mvcc', 'internal_timestamp_format'],
};

/** The params a `file_format: snapshot` dataset accepts (Spice's list). */
/**
 * `ferry_max_staleness` (Ferry's own key, hence the prefix): a dataset staler than this duration
 * is not ready. A dataset param, with a default for all in `snapshots.params`.
 */
export const MAX_STALENESS_PARAM = 'ferry_max_staleness';

/**
 * `ferry_retain_snapshots` (Ferry's own key): how many snapshots a reader holds for pinned reads
 * (`X-Ferry-Snapshot`), the current one included, pruned oldest first. A dataset param, with a
 * default for all in `snapshots.params`.
 */
export const RETAIN_SNAPSHOTS_PARAM = 'ferry_retain_snapshots';

/** Snapshots held when `ferry_retain_snapshots` is not set: the current one and the one before. */
export const DEFAULT_RETAIN_SNAPSHOTS = 2;

/** What `config` holds for pinned reads: its params, else the defaults (no config: the defaults). */
export function retentionOf(
  config:
    | { readonly retainSnapshots?: number | undefined; readonly retainDiskBudgetBytes?: number | undefined }
    | undefined,
): Retention {
  const budget = config?.retainDiskBudgetBytes;
  return {
    retain: config?.retainSnapshots ?? DEFAULT_RETAIN_SNAPSHOTS,
    ...(budget === undefined ? {} : { diskBudgetBytes: budget }),
  };
}

/** The most `ferry_retain_snapshots` may ask for (each held snapshot is a file on the reader's disk). */
export const MAX_RETAIN_SNAPSHOTS = 64;

/**
 * `ferry_retain_disk_budget` (Ferry's own key): the disk the earlier snapshots a reader holds for
 * pinned reads may take (`20GiB`, `512MB`, a number of bytes); past it the oldest are pruned even
 * within `ferry_retain_snapshots`. A dataset param, with a default for all in `snapshots.params`.
 */
export const RETAIN_DISK_BUDGET_PARAM = 'ferry_retain_disk_budget';

export const FILE_FORMAT_PARAMS = [
  'file_format',
  ...S3_PARAM_KEYS,
  MAX_STALENESS_PARAM,
  RETAIN_SNAPSHOTS_PARAM,
  RETAIN_DISK_BUDGET_PARAM,
];

/**
 * A `ferry_retain_snapshots` value: a whole number from 1 (the current snapshot only) to
 * {@link MAX_RETAIN_SNAPSHOTS}, as a number or a string; reported at `path` otherwise.
 */
export function readRetainSnapshots(report: Reporter, path: string, value: unknown): number | undefined {
  const text = typeof value === 'number' || typeof value === 'string' ? String(value) : undefined;
  const count = text !== undefined && /^\s*\d+\s*$/.test(text) ? Number(text) : Number.NaN;
  if (!Number.isSafeInteger(count) || count < 1 || count > MAX_RETAIN_SNAPSHOTS) {
    report.error(
      path,
      `'${text ?? JSON.stringify(value)}' is not a number of snapshots to hold; write a whole number from 1 (the current one only) to ${MAX_RETAIN_SNAPSHOTS} (default ${DEFAULT_RETAIN_SNAPSHOTS}: the current one and the one before)`,
    );
    return undefined;
  }
  return count;
}

/**
 * A `ferry_retain_disk_budget` value: a size as `duckdb_memory_limit` takes one (`20GiB`, `512MB`,
 * a number of bytes), 0 included (no earlier snapshot beyond what queries in flight need); reported
 * at `path` otherwise.
 */
export function readRetainDiskBudget(report: Reporter, path: string, value: unknown): number | undefined {
  const bytes = typeof value === 'number' || typeof value === 'string' ? parseByteSize(value) : undefined;
  if (bytes === undefined) {
    report.error(
      path,
      `'${typeof value === 'string' ? value : JSON.stringify(value)}' is not a disk size; write it like 20GiB or 512MB (the disk earlier snapshots held for pinned reads may take)`,
    );
  }
  return bytes;
}

export interface DatasetContext {
  readonly pod: PodSnapshots;
  readonly secrets: SecretSource;
}

export function readDataset(
  report: Reporter,
  index: number,
  entry: unknown,
  context: DatasetContext,
): DatasetDraft {
  const base = `datasets[${index}]`;
  if (!isMap(entry)) {
    report.error(base, 'must be a map with from, name and acceleration');
    return { index, report };
  }
  const name = readName(report, base, entry);
  const draft = { index, report, ...(name === undefined ? {} : { name }) };

  for (const key of Object.keys(entry)) {
    if (!KNOWN_DATASET_KEYS.includes(key)) report.unknownKey(`${base}.${key}`, key, KNOWN_DATASET_KEYS);
  }
  if (Object.hasOwn(entry, 'ref')) {
    report.error(
      `${base}.ref`,
      'dataset references are not supported by this runtime; define the dataset inline',
    );
  }
  const access = readAccess(report, base, entry);
  const from = readFrom(report, base, entry);

  // A key without a value (its contents commented out) is absent, as Spice reads its Option fields.
  const params = entry.params ?? undefined;
  if (params !== undefined && !isMap(params)) report.error(`${base}.params`, 'must be a map of parameters');
  const connectorParams = isMap(params) ? params : {};
  const acceleration = entry.acceleration ?? undefined;
  if (acceleration !== undefined && !isMap(acceleration)) {
    report.error(
      `${base}.acceleration`,
      'must be a map (enabled, engine, mode, refresh_mode, snapshots, params)',
    );
  }
  const accel = isMap(acceleration) ? acceleration : undefined;

  const fileFormat = connectorParams.file_format;
  const misspeltFormat =
    typeof fileFormat === 'string' &&
    !isSnapshotFormat(fileFormat) &&
    closest(fileFormat.trim(), FILE_FORMATS) === 'snapshot';
  if (misspeltFormat) {
    // Checked as the file_format dataset it was meant to be, so its other problems show too.
    report.error(
      `${base}.params.file_format`,
      `'${fileFormat}' is not a file format; did you mean 'snapshot'?`,
    );
  }
  if (misspeltFormat || isSnapshotFormat(fileFormat)) {
    if (access !== undefined && access.value !== 'read') {
      // As Spice: a file_format: snapshot dataset is read-only.
      report.error(
        access.path,
        `file_format: snapshot datasets are read-only; remove ${access.key}: ${access.value}`,
      );
    }
    const result = readFileFormatDataset(report, index, entry, from, connectorParams, accel, context);
    return { ...draft, form: 'file_format', ...result };
  }
  if (accel !== undefined && meantSnapshotRefresh(accel)) {
    if (access !== undefined && access.value !== 'read') {
      // Spice loads it and refuses the writes; so does this runtime.
      report.warn(
        access.path,
        `${access.value} is ignored: the dataset is loaded only from snapshots, so writes to it are refused`,
      );
    }
    const result = readRefreshModeDataset(report, index, entry, from, accel, context);
    return { ...draft, form: 'refresh_mode', ...result };
  }
  reportNotSnapshot(report, base, entry, accel);
  return draft;
}

function readName(report: Reporter, base: string, entry: Record<string, unknown>): string | undefined {
  if (!Object.hasOwn(entry, 'name')) {
    report.error(`${base}.name`, 'missing; give the dataset a name (letters, digits and underscores)');
    return undefined;
  }
  const name = readText(report, `${base}.name`, entry.name);
  if (name === undefined) return undefined;
  if (!SPICEPOD_NAME.test(name)) {
    report.error(
      `${base}.name`,
      `'${name}' is not a safe dataset name; use up to 128 letters, digits and underscores`,
    );
    return undefined;
  }
  report.nameDataset(name);
  return name;
}

/**
 * `access`, or `mode` (Spice's older name for it): its key, key path and value when set and one of
 * Spice's modes; otherwise undefined (a wrong value, or both keys, is reported).
 */
function readAccess(
  report: Reporter,
  base: string,
  entry: Record<string, unknown>,
): { readonly key: string; readonly path: string; readonly value: string } | undefined {
  const hasAccess = Object.hasOwn(entry, 'access');
  const hasMode = Object.hasOwn(entry, 'mode');
  if (hasAccess && hasMode) {
    report.error(`${base}.mode`, 'is another name for access, which is set too; keep only one');
    return undefined;
  }
  if (!hasAccess && !hasMode) return undefined;
  const key = hasAccess ? 'access' : 'mode';
  const path = `${base}.${key}`;
  const value = readChoice(report, path, entry[key], ACCESS_MODES);
  return value === undefined ? undefined : { key, path, value };
}

function readFrom(report: Reporter, base: string, entry: Record<string, unknown>): string | undefined {
  if (!Object.hasOwn(entry, 'from')) {
    report.error(
      `${base}.from`,
      "missing; set it to the dataset's source (such as postgres:public.orders), or to the s3:// snapshot location with params.file_format: snapshot",
    );
    return undefined;
  }
  const from = readText(report, `${base}.from`, entry.from);
  if (from === '')
    report.error(`${base}.from`, "is empty; set it to the dataset's source or snapshot location");
  return from === '' ? undefined : from;
}

function isSnapshotFormat(value: unknown): boolean {
  return typeof value === 'string' && value.trim().toLowerCase() === 'snapshot';
}

function reportNotSnapshot(
  report: Reporter,
  base: string,
  entry: Record<string, unknown>,
  accel: Record<string, unknown> | undefined,
): void {
  const fix = 'this runtime serves only snapshot datasets';
  if (accel === undefined) {
    if ((entry.acceleration ?? undefined) === undefined) {
      report.error(
        `${base}.acceleration`,
        `missing; ${fix}: add acceleration with refresh_mode: snapshot, or set from to an s3:// snapshot location with params.file_format: snapshot`,
      );
    }
    return;
  }
  const path = `${base}.acceleration.refresh_mode`;
  if (accel.refresh_mode === undefined) {
    report.error(path, `missing; ${fix}: set refresh_mode: snapshot`);
    return;
  }
  const mode = readText(report, path, accel.refresh_mode);
  if (mode === undefined) return;
  if (REFRESH_MODES.includes(mode)) {
    report.error(
      path,
      `'${mode}' is not served by this runtime, which serves only snapshot datasets; set refresh_mode: snapshot`,
    );
  } else {
    report.error(path, `'${mode}' is not a refresh mode; use snapshot${didYouMean(mode, REFRESH_MODES)}`);
  }
}

interface FormResult {
  readonly live?: LiveFile;
  readonly config?: DatasetConfig;
}

export interface LiveFile {
  /** The key path, e.g. `datasets[0].acceleration.params.duckdb_file`. */
  readonly path: string;
  readonly file: string;
}

/**
 * Whether an acceleration means `refresh_mode: snapshot`, even misspelt: in the key (`refresh_mod:
 * snapshot`) or in the value (`refresh_mode: snapshto`). Such a dataset is checked as the snapshot
 * dataset it was meant to be, so the typo and every other problem are reported in one run.
 */
function meantSnapshotRefresh(accel: Record<string, unknown>): boolean {
  let value = accel.refresh_mode;
  if (value === undefined) {
    const misspelt = Object.keys(accel).find(
      (key) =>
        !KNOWN_ACCELERATION_KEYS.includes(key) && closest(key, KNOWN_ACCELERATION_KEYS) === 'refresh_mode',
    );
    value = misspelt === undefined ? undefined : accel[misspelt];
  }
  return typeof value === 'string' && closest(value, REFRESH_MODES) === 'snapshot';
}

function readRefreshModeDataset(
  report: Reporter,
  index: number,
  entry: Record<string, unknown>,
  from: string | undefined,
  accel: Record<string, unknown>,
  { pod, secrets }: DatasetContext,
): FormResult {
  const base = `datasets[${index}]`;
  const at = `${base}.acceleration`;
  warnComputedKeys(report, base, entry);
  const trustedKeys = readDatasetTrustedKeys(report, base, entry.params, secrets) ?? pod.trustedKeys;
  warnMisplacedParams(report, base, entry.params);
  checkAccelerationKeys(report, at, accel, 'refresh_mode');
  if (accel.refresh_mode !== undefined && accel.refresh_mode !== 'snapshot') {
    const refreshMode = readText(report, `${at}.refresh_mode`, accel.refresh_mode);
    if (refreshMode !== undefined) {
      report.error(`${at}.refresh_mode`, `'${refreshMode}' is not a refresh mode; did you mean 'snapshot'?`);
    }
  }
  readEnabled(report, at, accel);

  let engine: EngineName | undefined;
  if (accel.engine === undefined) {
    report.error(
      `${at}.engine`,
      'missing; refresh_mode: snapshot needs a file engine: set engine to duckdb, sqlite or turso',
    );
  } else {
    engine = readEngine(report, `${at}.engine`, accel.engine);
  }
  if (accel.mode === undefined) {
    report.error(`${at}.mode`, 'missing; refresh_mode: snapshot requires mode: file; add mode: file');
  } else {
    const mode = readText(report, `${at}.mode`, accel.mode);
    if (mode !== undefined && mode !== 'file') {
      const meant = closest(mode, ACCELERATION_MODES) === 'file' ? "did you mean 'file'?" : 'set mode: file';
      report.error(`${at}.mode`, `refresh_mode: snapshot requires mode: file, not '${mode}'; ${meant}`);
    }
  }
  let snapshotsMode: SnapshotsMode | undefined;
  if (accel.snapshots === undefined) {
    report.error(
      `${at}.snapshots`,
      'missing; refresh_mode: snapshot requires acceleration.snapshots: enabled or bootstrap_only; add snapshots: bootstrap_only',
    );
  } else {
    const value = readText(report, `${at}.snapshots`, accel.snapshots);
    if (value === 'enabled' || value === 'bootstrap_only') snapshotsMode = value;
    else if (value !== undefined) {
      const close = closest(value, READER_SNAPSHOT_BEHAVIOURS);
      report.error(
        `${at}.snapshots`,
        `refresh_mode: snapshot requires acceleration.snapshots: enabled or bootstrap_only, not '${value}'; ${
          close === undefined
            ? 'set snapshots: enabled (load each newer snapshot) or bootstrap_only (load one at start)'
            : `did you mean '${close}'?`
        }`,
      );
    }
  }
  const refreshCheckIntervalMs = readInterval(report, at, accel);
  const { live, limits, maxStalenessMs, retainSnapshots, retainDiskBudgetBytes } = readEngineParams(
    report,
    `${at}.params`,
    accel.params,
    engine,
    'refresh_mode',
    secrets,
  );
  const staleness = maxStalenessMs ?? pod.maxStalenessMs;
  const retain = retainSnapshots ?? pod.retainSnapshots;
  const budget = retainDiskBudgetBytes ?? pod.retainDiskBudgetBytes;

  const name = report.datasetName;
  if (pod.location === undefined && !pod.locationBroken) {
    report.error(
      'snapshots.location',
      `not set, but dataset '${name ?? base}' uses refresh_mode: snapshot; add snapshots.location (s3://bucket/prefix/ or file:///absolute/path/)`,
    );
  }
  if (!pod.enabled) {
    report.error(
      'snapshots.enabled',
      `is false, so dataset '${name ?? base}' (refresh_mode: snapshot) cannot read snapshots; set snapshots.enabled: true`,
    );
  }

  const result = live === undefined ? {} : { live };
  if (
    report.failed ||
    name === undefined ||
    from === undefined ||
    engine === undefined ||
    snapshotsMode === undefined ||
    refreshCheckIntervalMs === undefined ||
    pod.location === undefined
  ) {
    return result;
  }
  return {
    ...result,
    config: {
      name,
      index,
      form: 'refresh_mode',
      from,
      engine,
      fileEngine: fileFormatOf(engine),
      location: pod.location.uri,
      refreshCheckIntervalMs,
      bootstrapOnFailure: pod.bootstrapOnFailure,
      snapshotsMode,
      ...(live?.file === undefined ? {} : { liveFile: live.file }),
      ...(pod.location.scheme === 's3' && pod.s3 !== undefined ? { s3: pod.s3 } : {}),
      ...(limits === undefined ? {} : { queryLimits: limits }),
      ...(trustedKeys === undefined ? {} : { trustedKeys }),
      ...(staleness === undefined ? {} : { maxStalenessMs: staleness }),
      ...(retain === undefined ? {} : { retainSnapshots: retain }),
      ...(budget === undefined ? {} : { retainDiskBudgetBytes: budget }),
    },
  };
}

function readFileFormatDataset(
  report: Reporter,
  index: number,
  entry: Record<string, unknown>,
  from: string | undefined,
  params: Record<string, unknown>,
  accel: Record<string, unknown> | undefined,
  { pod, secrets }: DatasetContext,
): FormResult {
  const base = `datasets[${index}]`;
  let location: Location | undefined;
  if (from !== undefined) {
    const parsed = parseLocation(from);
    if ('problem' in parsed || parsed.scheme !== 's3') {
      report.error(
        `${base}.from`,
        `'${from}' is not an s3:// location, but params.file_format: snapshot reads snapshots from S3; set from to s3://bucket/prefix/`,
      );
    } else location = parsed;
  }
  for (const key of DATASET_COMPUTED_KEYS) {
    if (Object.hasOwn(entry, key)) {
      report.error(
        `${base}.${key}`,
        `file_format: snapshot datasets serve the snapshot's data as published and cannot compute ${key}; remove it`,
      );
    }
  }
  const trustedKeys = readDatasetTrustedKeys(report, base, params, secrets);
  for (const key of Object.keys(params)) {
    if (FILE_FORMAT_PARAMS.includes(key) || key === TRUSTED_KEYS_PARAM) continue;
    const path = `${base}.params.${key}`;
    if (key === 's3_queue_url' || key === 'ferry_sns_topic_arn') {
      report.error(
        path,
        `file_format: snapshot datasets do not read a queue (they check for new snapshots every refresh_check_interval); remove it, or use refresh_mode: snapshot with snapshots.params.${key}`,
      );
    } else {
      const close = closest(key, FILE_FORMAT_PARAMS);
      report.error(
        path,
        close === undefined
          ? `not used by file_format: snapshot datasets; remove it (they accept ${listOr(FILE_FORMAT_PARAMS)})`
          : `unknown key; did you mean '${close}'?`,
      );
    }
  }
  const s3 = readS3Params(report, `${base}.params`, params, secrets);

  let engine: EngineName | undefined;
  let refreshCheckIntervalMs: number | undefined = DEFAULT_REFRESH_CHECK_INTERVAL_MS;
  let limits: QueryLimits | undefined;
  if (accel !== undefined) {
    const at = `${base}.acceleration`;
    checkAccelerationKeys(report, at, accel, 'file_format');
    readEnabled(report, at, accel);
    if (accel.engine !== undefined) engine = readEngine(report, `${at}.engine`, accel.engine);
    if (accel.mode !== undefined) {
      const mode = readText(report, `${at}.mode`, accel.mode);
      if (mode !== undefined && mode !== 'file') {
        report.error(
          `${at}.mode`,
          `file_format: snapshot datasets keep a local file copy of the current snapshot; remove mode: ${mode}`,
        );
      }
    }
    if (accel.refresh_mode !== undefined) {
      const mode = readText(report, `${at}.refresh_mode`, accel.refresh_mode);
      if (mode !== undefined && mode !== 'snapshot') {
        report.error(
          `${at}.refresh_mode`,
          `file_format: snapshot datasets refresh only by loading newer snapshots; remove refresh_mode: ${mode}`,
        );
      }
    }
    if (accel.snapshots !== undefined) {
      const value = readText(report, `${at}.snapshots`, accel.snapshots);
      if (value !== undefined && value !== 'bootstrap_only' && value !== 'disabled') {
        report.error(
          `${at}.snapshots`,
          SNAPSHOT_BEHAVIOURS.includes(value)
            ? `file_format: snapshot datasets only read snapshots and never create them; remove snapshots: ${value}`
            : `'${value}' is not allowed; use bootstrap_only or remove it`,
        );
      }
    }
    refreshCheckIntervalMs = readInterval(report, at, accel);
    ({ limits } = readEngineParams(report, `${at}.params`, accel.params, engine, 'file_format', secrets));
  }

  const own = Object.hasOwn(params, MAX_STALENESS_PARAM)
    ? readDuration(report, `${base}.params.${MAX_STALENESS_PARAM}`, params[MAX_STALENESS_PARAM])
    : undefined;
  const staleness = own ?? pod.maxStalenessMs;
  const retain =
    (Object.hasOwn(params, RETAIN_SNAPSHOTS_PARAM)
      ? readRetainSnapshots(
          report,
          `${base}.params.${RETAIN_SNAPSHOTS_PARAM}`,
          params[RETAIN_SNAPSHOTS_PARAM],
        )
      : undefined) ?? pod.retainSnapshots;
  const budget =
    (Object.hasOwn(params, RETAIN_DISK_BUDGET_PARAM)
      ? readRetainDiskBudget(
          report,
          `${base}.params.${RETAIN_DISK_BUDGET_PARAM}`,
          params[RETAIN_DISK_BUDGET_PARAM],
        )
      : undefined) ?? pod.retainDiskBudgetBytes;
  const name = report.datasetName;
  if (
    report.failed ||
    name === undefined ||
    from === undefined ||
    location === undefined ||
    s3 === undefined ||
    refreshCheckIntervalMs === undefined
  ) {
    return {};
  }
  return {
    config: {
      name,
      index,
      form: 'file_format',
      from,
      engine,
      fileEngine: engine === undefined ? undefined : fileFormatOf(engine),
      location: location.uri,
      refreshCheckIntervalMs,
      bootstrapOnFailure: 'warn',
      snapshotsMode: 'bootstrap_only',
      s3,
      ...(limits === undefined ? {} : { queryLimits: limits }),
      ...(trustedKeys === undefined ? {} : { trustedKeys }),
      ...(staleness === undefined ? {} : { maxStalenessMs: staleness }),
      ...(retain === undefined ? {} : { retainSnapshots: retain }),
      ...(budget === undefined ? {} : { retainDiskBudgetBytes: budget }),
    },
  };
}

/** The dataset's own `params.ferry_trusted_keys` (which replaces the pod's list), when set. */
function readDatasetTrustedKeys(
  report: Reporter,
  base: string,
  params: unknown,
  secrets: SecretSource,
): readonly TrustedKey[] | undefined {
  if (!isMap(params) || !Object.hasOwn(params, TRUSTED_KEYS_PARAM)) return undefined;
  return readTrustedKeys(report, `${base}.params.${TRUSTED_KEYS_PARAM}`, params[TRUSTED_KEYS_PARAM], secrets);
}

/** Ferry's acceleration params put in a refresh_mode: snapshot dataset's own `params`, which are its source's. */
function warnMisplacedParams(report: Reporter, base: string, params: unknown): void {
  if (!isMap(params)) return;
  for (const key of [MAX_STALENESS_PARAM, RETAIN_SNAPSHOTS_PARAM, RETAIN_DISK_BUDGET_PARAM]) {
    if (Object.hasOwn(params, key)) {
      report.warn(
        `${base}.params.${key}`,
        `ignored here: a refresh_mode: snapshot dataset reads it from its acceleration.params; move it to ${base}.acceleration.params.${key}`,
      );
    }
  }
}

function warnComputedKeys(report: Reporter, base: string, entry: Record<string, unknown>): void {
  for (const key of DATASET_COMPUTED_KEYS) {
    if (Object.hasOwn(entry, key)) {
      report.warn(`${base}.${key}`, `ignored: a snapshot dataset serves the snapshot's data as published`);
    }
  }
}

function checkAccelerationKeys(
  report: Reporter,
  at: string,
  accel: Record<string, unknown>,
  form: DatasetForm,
): void {
  const known = KNOWN_ACCELERATION_KEYS;
  for (const key of Object.keys(accel)) {
    const path = `${at}.${key}`;
    if (ACCELERATION_KEYS.includes(key)) continue;
    if (SNAPSHOT_WRITER_KEYS.includes(key)) {
      report.warn(path, 'ignored: this dataset only reads snapshots and never creates them');
    } else if (DATA_SHAPING_KEYS.includes(key)) {
      if (form === 'file_format') {
        report.error(
          path,
          `file_format: snapshot datasets serve the snapshot's data as published; remove ${key}`,
        );
      } else {
        report.warn(path, "ignored: a snapshot dataset serves the snapshot's data as published");
      }
    } else if (OTHER_ACCELERATION_KEYS.includes(key)) {
      report.warn(path, 'ignored by this runtime');
    } else {
      report.unknownKey(path, key, known);
    }
  }
}

function readEnabled(report: Reporter, at: string, accel: Record<string, unknown>): void {
  if (accel.enabled === undefined) return;
  const enabled = readBoolean(report, `${at}.enabled`, accel.enabled);
  if (enabled === false) {
    report.error(
      `${at}.enabled`,
      'acceleration is disabled, but a snapshot dataset is served from its acceleration; remove enabled: false',
    );
  }
}

function readEngine(report: Reporter, path: string, value: unknown): EngineName | undefined {
  const engine = readText(report, path, value);
  if (engine === undefined) return undefined;
  const found = SNAPSHOT_ENGINES.find((candidate) => candidate === engine);
  if (found !== undefined) return found;
  if (UNSUPPORTED_ENGINES.includes(engine)) {
    report.error(path, `engine '${engine}' is not supported by this runtime; use duckdb, sqlite or turso`);
  } else if (NON_FILE_ENGINES.includes(engine)) {
    report.error(
      path,
      `engine '${engine}' cannot load snapshots (it is not a file engine); use duckdb, sqlite or turso`,
    );
  } else {
    report.error(
      path,
      `engine '${engine}' is unknown; use duckdb, sqlite or turso${didYouMean(engine, SNAPSHOT_ENGINES)}`,
    );
  }
  return undefined;
}

function readInterval(report: Reporter, at: string, accel: Record<string, unknown>): number | undefined {
  if (accel.refresh_check_interval === undefined) return DEFAULT_REFRESH_CHECK_INTERVAL_MS;
  return readDuration(report, `${at}.refresh_check_interval`, accel.refresh_check_interval);
}

/** `duckdb_memory_limit`: `512MB`, `2GiB`, `1.5 GB`, or a number of bytes; at least 16 MiB. */
function readMemoryLimit(
  report: Reporter,
  path: string,
  value: unknown,
  secrets: SecretSource,
): number | undefined {
  const text = typeof value === 'number' ? String(value) : readParam(report, path, value, secrets);
  if (text === undefined) return undefined;
  const bytes = parseByteSize(text);
  if (bytes === undefined || bytes < 16 * 2 ** 20) {
    report.error(path, `'${text}' is not a memory size of at least 16 MiB; write it like 512MB or 2GiB`);
    return undefined;
  }
  return bytes;
}

/** `duckdb_threads`: a positive whole number. */
function readThreads(
  report: Reporter,
  path: string,
  value: unknown,
  secrets: SecretSource,
): number | undefined {
  const text = typeof value === 'number' ? String(value) : readParam(report, path, value, secrets);
  if (text === undefined) return undefined;
  const threads = /^\s*\d+\s*$/.test(text) ? Number(text) : Number.NaN;
  if (!Number.isSafeInteger(threads) || threads < 1) {
    report.error(path, `'${text}' is not a number of threads; write a whole number of at least 1`);
    return undefined;
  }
  return threads;
}

interface EngineParams {
  readonly live?: LiveFile;
  readonly limits?: QueryLimits;
  readonly maxStalenessMs?: number;
  readonly retainSnapshots?: number;
  readonly retainDiskBudgetBytes?: number;
}

/**
 * `acceleration.params`: the engine's live-file param (for `refresh_mode` datasets), the DuckDB
 * query limits (`duckdb_memory_limit`, `duckdb_threads`), other Spice tuning params (ignored,
 * with a warning) and nothing else.
 */
function readEngineParams(
  report: Reporter,
  at: string,
  value: unknown,
  engine: EngineName | undefined,
  form: DatasetForm,
  secrets: SecretSource,
): EngineParams {
  if (value === undefined || value === null) return {};
  if (!isMap(value)) {
    report.error(at, 'must be a map of engine parameters');
    return {};
  }
  const engines = engine === undefined ? SNAPSHOT_ENGINES : [engine];
  const tuning = engines.flatMap((e) => TUNING_PARAMS[e]);
  const known = [
    ...ALL_FILE_PARAMS,
    ...PLACEMENT_PARAMS,
    ...SNAPSHOT_ENGINES.flatMap((e) => TUNING_PARAMS[e]),
    MAX_STALENESS_PARAM,
    RETAIN_SNAPSHOTS_PARAM,
    RETAIN_DISK_BUDGET_PARAM,
  ];
  let maxStalenessMs: number | undefined;
  let retainSnapshots: number | undefined;
  let retainDiskBudgetBytes: number | undefined;
  let live: LiveFile | undefined;
  let filePath: string | undefined;
  let memoryLimitBytes: number | undefined;
  let threads: number | undefined;
  for (const key of Object.keys(value)) {
    const path = `${at}.${key}`;
    if (key === MAX_STALENESS_PARAM) {
      maxStalenessMs = readDuration(report, path, value[key]);
      continue;
    }
    if (key === RETAIN_SNAPSHOTS_PARAM) {
      retainSnapshots = readRetainSnapshots(report, path, value[key]);
      continue;
    }
    if (key === RETAIN_DISK_BUDGET_PARAM) {
      retainDiskBudgetBytes = readRetainDiskBudget(report, path, value[key]);
      continue;
    }
    if (LIMIT_PARAMS.includes(key) && tuning.includes(key)) {
      if (key === 'duckdb_memory_limit')
        memoryLimitBytes = readMemoryLimit(report, path, value[key], secrets);
      else threads = readThreads(report, path, value[key], secrets);
      continue;
    }
    if (ALL_FILE_PARAMS.includes(key) || PLACEMENT_PARAMS.includes(key)) {
      if (form === 'file_format') {
        report.error(
          path,
          `file_format: snapshot datasets keep their local copy where the runtime chooses; remove ${key}`,
        );
        continue;
      }
      if (PLACEMENT_PARAMS.includes(key)) {
        report.warn(path, 'ignored by this runtime; set duckdb_file to choose the live file');
        continue;
      }
      if (engine === undefined) continue;
      const own = FILE_PARAMS[engine];
      if (!own.includes(key)) {
        report.error(path, `${key} does not apply to engine ${engine}; use ${listOr(own)}`);
        continue;
      }
      if (filePath !== undefined) {
        report.error(path, `both ${filePath.slice(at.length + 1)} and ${key} are set; keep only one`);
        continue;
      }
      const text = readParam(report, path, value[key], secrets);
      if (text === '') report.error(path, 'is empty; set the path of the live file or remove it');
      else if (text !== undefined) live = { path, file: text };
      filePath = path;
    } else if (tuning.includes(key)) {
      report.warn(path, 'ignored by this runtime');
    } else if (known.includes(key)) {
      report.error(path, `${key} does not apply to engine ${engine ?? 'unknown'}; remove it`);
    } else {
      report.unknownKey(path, key, known);
    }
  }
  const limits = {
    ...(memoryLimitBytes === undefined ? {} : { memoryLimitBytes }),
    ...(threads === undefined ? {} : { threads }),
  };
  return {
    ...(live === undefined ? {} : { live }),
    ...(Object.keys(limits).length === 0 ? {} : { limits }),
    ...(maxStalenessMs === undefined ? {} : { maxStalenessMs }),
    ...(retainSnapshots === undefined ? {} : { retainSnapshots }),
    ...(retainDiskBudgetBytes === undefined ? {} : { retainDiskBudgetBytes }),
  };
}
