/**
 * The typed result of loading a spicepod: what the runtime, the coordinator and `ferry validate`
 * read. Wire names (`refresh_check_interval`) become camelCase here, durations become
 * milliseconds and locations are normalised to end in `/`. See CONFIG.md for the YAML side.
 */
import type { EngineName, FileFormat } from '../engines.js';

/** `snapshots.bootstrap_on_failure_behavior`. */
export type BootstrapOnFailure = 'warn' | 'retry' | 'fallback';

/** `acceleration.snapshots` values that read snapshots. */
export type SnapshotsMode = 'enabled' | 'bootstrap_only';

/** `s3_auth` values a snapshot location accepts. */
export type S3Auth = 'iam_role' | 'key';

/**
 * Which of Spice's two declarations a dataset uses: `acceleration.refresh_mode: snapshot` reading
 * the top-level `snapshots.location`, or `from: s3://…` with `params.file_format: snapshot`.
 */
export type DatasetForm = 'refresh_mode' | 'file_format';

export interface S3Credentials {
  readonly accessKeyId: string;
  readonly secretAccessKey: string;
  readonly sessionToken?: string;
}

/** How to reach an `s3://` location (from `snapshots.params` or a dataset's `params`). */
export interface S3Settings {
  /** `s3_region`; absent: the AWS SDK resolves it (environment, profile). */
  readonly region?: string;
  /** `s3_endpoint`, for S3-compatible servers. */
  readonly endpoint?: string;
  readonly auth: S3Auth;
  /** Present when `s3_auth` is `key`; otherwise the default AWS credential chain applies. */
  readonly credentials?: S3Credentials;
  readonly allowHttp: boolean;
  readonly clientTimeoutMs?: number;
}

/** The SQS queue carrying the location's S3 event notifications: a fixed one, or one made per reader. */
export type QueueConfig = QueueUrlConfig | TopicQueueConfig;

/** `s3_queue_url`: a queue someone made, read by this process alone (Spice's setting). */
export interface QueueUrlConfig {
  readonly url: string;
  /** From the host `sqs.<region>.…`, else `s3_region`, else `us-east-1`. */
  readonly region: string;
  /** An SQS endpoint override (`s3_queue_endpoint`, `AWS_ENDPOINT_URL_SQS` or `AWS_ENDPOINT_URL`). */
  readonly endpoint?: string;
  readonly topic?: never;
}

/**
 * `ferry_sns_topic_arn` (Ferry only): the process makes its own queue in the topic's region,
 * subscribes it to the topic, and deletes both when it stops. The URL is known only once made.
 */
export interface TopicQueueConfig {
  readonly topic: SnsTopicConfig;
  /** The queue's region: the topic's. */
  readonly region: string;
  /** An SQS endpoint override (`s3_queue_endpoint`, `AWS_ENDPOINT_URL_SQS` or `AWS_ENDPOINT_URL`). */
  readonly endpoint?: string;
  readonly url?: never;
}

export interface SnsTopicConfig {
  readonly arn: string;
  readonly region: string;
  /** `ferry_sns_raw_message_delivery`, default true: the subscription delivers the S3 event itself. */
  readonly rawMessageDelivery: boolean;
  /** `ferry_sns_heartbeat_interval`, default 1m: how often the queue's heartbeat tag is refreshed. */
  readonly heartbeatIntervalMs: number;
  /** An SNS endpoint override (`AWS_ENDPOINT_URL_SNS` or `AWS_ENDPOINT_URL`). */
  readonly endpoint?: string;
}

/** The top-level `snapshots` block. */
export interface SnapshotsConfig {
  readonly enabled: boolean;
  /** Normalised, ending in `/`; absent when not configured. */
  readonly location?: string;
  readonly bootstrapOnFailure: BootstrapOnFailure;
  /** Present when `location` is `s3://`. */
  readonly s3?: S3Settings;
  /** `params.s3_queue_url` as written (validated only when a dataset would read it). */
  readonly queueUrl?: string;
  /** `params.ferry_sns_topic_arn` as written (validated only when a dataset would read it). */
  readonly topicArn?: string;
  /** `params.ferry_trusted_keys`: the writers' public keys the pod's snapshot datasets verify against. */
  readonly trustedKeys?: readonly TrustedKey[];
}

/** An Ed25519 public key a reader trusts (`ferry_trusted_keys`). */
export interface TrustedKey {
  /** PEM `PUBLIC KEY` text. */
  readonly pem: string;
  /** The key id statements name (`keyIdOf`). */
  readonly keyId: string;
}

/** The one notification consumer of the pod: present only when a valid dataset reads the queue. */
export interface NotificationsConfig {
  readonly queue: QueueConfig;
  /** The location whose `metadata.json` events the queue carries. */
  readonly location: string;
  /** Credentials and region used to read the queue (the location's). */
  readonly s3: S3Settings;
  /** The valid datasets the queue's notifications are routed to. */
  readonly datasets: readonly string[];
}

export interface SpicepodConfig {
  /** The file name given to the loader, used in every message. */
  readonly file: string;
  readonly version: string;
  readonly kind: 'Spicepod';
  readonly name: string;
  readonly snapshots?: SnapshotsConfig;
  readonly notifications?: NotificationsConfig;
  /**
   * `runtime.auth.api-key`, when enabled: every endpoint (HTTP, Flight, the inspector, `/metrics`)
   * requires one of these keys, but `/health` and `/v1/ready`. Holds secrets: never log it.
   */
  readonly auth?: AuthConfig;
  /**
   * `runtime.tls` with `enabled: true`: both endpoints serve TLS with this certificate and key
   * (never plaintext). Holds the PEM text or the file to read it from.
   */
  readonly tls?: TlsConfig;
  /** `runtime.caching.sql_results` (or the older `runtime.results_cache`): on by default, as in Spice. */
  readonly resultsCache: ResultsCacheConfig;
  /** `runtime.task_history`: on by default, as in Spice. */
  readonly taskHistory: TaskHistoryConfig;
  /** `runtime.cors`: present when enabled. */
  readonly cors?: CorsConfig;
  /** `runtime.flight.max_message_size`, in bytes, when set. */
  readonly flightMaxMessageBytes?: number;
  /** `runtime.ready_state` (default `on_load`). */
  readonly readyState: 'on_load' | 'on_registration';
  /** Ferry's `runtime.query.ferry_timeout`, in ms, when set. */
  readonly queryTimeoutMs?: number;
  /** Ferry's `runtime.query.ferry_stream_idle_timeout`, in ms, when set. */
  readonly streamIdleTimeoutMs?: number;
  /** Ferry's `runtime.query.ferry_max_in_flight` (queries admitted at once; 0: no bound), when set. */
  readonly maxQueriesInFlight?: number;
  /** The valid `views` entries, in file order. */
  readonly views: readonly ViewConfig[];
  /** The `secrets` stores (Spice's `from: env` stores); empty: the default env store. */
  readonly secretStores: readonly SecretStoreConfig[];
  /**
   * Every secret value a `${…}` reference resolved to, and the reference: what log lines and
   * messages show instead of the value. Holds secrets: never log it.
   */
  readonly secretReferences: readonly SecretReference[];
  /** Spice top-level keys present in the file that this runtime records but does not act on. */
  readonly ignoredKeys: readonly string[];
  /** `runtime` keys present in the file that this runtime records but does not act on. */
  readonly ignoredRuntimeKeys: readonly string[];
}

export interface SecretReference {
  readonly value: string;
  /** As written, e.g. `${secrets:API_KEY}`. */
  readonly reference: string;
}

/** One of the spicepod's `secrets` stores: an env store (the one kind this runtime reads). */
export interface SecretStoreConfig {
  readonly name: string;
  readonly from: 'env';
  /** `params.file_path`: a dotenv file read before `.env.local` and `.env`. */
  readonly filePath?: string;
}

/** A PEM certificate or key: its text, given inline (secrets resolved) or read from a file. */
export interface PemSource {
  readonly pem: string;
  /** The key that gave it (`runtime.tls.certificate_file`), for messages. */
  readonly path: string;
  /** The file it was read from, as written (a relative path is beside the spicepod). */
  readonly file?: string;
}

export interface TlsConfig {
  readonly certificate: PemSource;
  readonly key: PemSource;
}

/** How the SQL results cache runs (Spice's `runtime.caching.sql_results`). */
export interface ResultsCacheConfig {
  readonly enabled: boolean;
  /** `max_size` (or `cache_max_size`) in bytes; default 128 MiB. */
  readonly maxSizeBytes: number;
  /** `item_ttl`; default 1 s. */
  readonly itemTtlMs: number;
  /** The key that configured it, for messages; absent: the defaults. */
  readonly configuredBy?: 'runtime.caching.sql_results' | 'runtime.results_cache';
}

/** Spice's `runtime.task_history`: the `spice.runtime.task_history` table of recent queries. */
export interface TaskHistoryConfig {
  readonly enabled: boolean;
  /** `none` (default) or `truncated`: a short text of each result's first rows. */
  readonly capturedOutput: 'none' | 'truncated';
  /** Rows older than this are removed; default 8 h (at least 1 min). */
  readonly retentionPeriodMs: number;
  /** How often old rows are removed; default 15 min (at least 1 min). */
  readonly retentionCheckIntervalMs: number;
}

/** `runtime.cors` with `enabled: true`. */
export interface CorsConfig {
  /** Default `["*"]`: any origin. */
  readonly allowedOrigins: readonly string[];
}

/** One `views` entry: a named query over the datasets, served as a table of the namespace. */
export interface ViewConfig {
  readonly name: string;
  /** Position in `views`, for messages. */
  readonly index: number;
  readonly description?: string;
  /** The view's SQL (from `sql`, or read from `sql_ref`). */
  readonly sql: string;
  /** `dependsOn`, as written. */
  readonly dependsOn: readonly string[];
}

/** A key's access, from Spice's `:ro` / `:rw` suffix (read-only when absent). */
export type ApiKeyAccess = 'read' | 'read_write';

export interface ApiKeyConfig {
  /** The key, secrets resolved, suffix removed. */
  readonly key: string;
  readonly access: ApiKeyAccess;
}

/** `runtime.auth.api-key` with `enabled: true` (Spice's default). */
export interface AuthConfig {
  /** At least one; any of them authenticates a request (several allow rotation). */
  readonly apiKeys: readonly ApiKeyConfig[];
}

/** Everything the runtime needs to serve one dataset. */
export interface DatasetConfig {
  readonly name: string;
  /** Position in `datasets`, for messages. */
  readonly index: number;
  readonly form: DatasetForm;
  /** As written; never contacted (for `file_format` datasets it is the location). */
  readonly from: string;
  /** The configured engine; `undefined` when it is taken from metadata.json. */
  readonly engine: EngineName | undefined;
  /** The file format the engine reads (turso → sqlite); `undefined` with `engine`. */
  readonly fileEngine: FileFormat | undefined;
  /** Normalised location, ending in `/`. */
  readonly location: string;
  readonly refreshCheckIntervalMs: number;
  readonly bootstrapOnFailure: BootstrapOnFailure;
  readonly snapshotsMode: SnapshotsMode;
  /** `duckdb_file` / `sqlite_file` / `turso_file`; absent: the runtime decides. */
  readonly liveFile?: string;
  /** Present when `location` is `s3://`. */
  readonly s3?: S3Settings;
  /** Present when this dataset is notified through the pod's queue. */
  readonly queue?: QueueConfig;
  /**
   * `duckdb_memory_limit` (in bytes) and `duckdb_threads` from `acceleration.params`: every DuckDB
   * query that reads the dataset runs within them.
   */
  readonly queryLimits?: QueryLimits;
  /**
   * `ferry_trusted_keys` (the dataset's `params`, else `snapshots.params`): when present, a snapshot
   * is served only with a signature by one of these keys over what metadata.json says of it.
   */
  readonly trustedKeys?: readonly TrustedKey[];
  /**
   * `ferry_max_staleness` (Ferry's key; the dataset's param, else `snapshots.params`): past this
   * staleness the dataset is not ready. Absent: no bound.
   */
  readonly maxStalenessMs?: number;
  /**
   * `ferry_retain_snapshots` (Ferry's key; the dataset's param, else `snapshots.params`): how many
   * snapshots this reader holds for pinned reads, the current one included. Absent: the default,
   * {@link DEFAULT_RETAIN_SNAPSHOTS} (the current one and the one before).
   */
  readonly retainSnapshots?: number;
  /**
   * `ferry_retain_disk_budget` (Ferry's key; the dataset's param, else `snapshots.params`): the disk,
   * in bytes, the earlier snapshots held for pinned reads may take; the oldest past it are pruned
   * even within {@link retainSnapshots}. Absent: no budget (the count alone).
   */
  readonly retainDiskBudgetBytes?: number;
}

/** What a dataset holds for pinned reads (`ferry_retain_snapshots`, `ferry_retain_disk_budget`). */
export interface Retention {
  /** Snapshots held, the current one included. */
  readonly retain: number;
  /** The disk the earlier ones may take, in bytes; absent: no budget. */
  readonly diskBudgetBytes?: number;
}

export interface QueryLimits {
  readonly memoryLimitBytes?: number;
  readonly threads?: number;
}

/** One problem (or warning) found while loading. `message` is complete and starts with the file. */
export interface ConfigIssue {
  /** The key path, e.g. `datasets[0].acceleration.engine`; empty for whole-file problems. */
  readonly path: string;
  readonly message: string;
  /** The dataset this issue fails (or concerns), when its name is known. */
  readonly dataset?: string;
  /** The view (of `views`) this issue fails, when it concerns one. */
  readonly view?: string;
  /** Pod-level: the pod cannot start. Dataset-level issues fail only their dataset. */
  readonly fatal: boolean;
}

export interface LoadSpicepodOptions {
  /** The name used at the start of every message (e.g. `spicepod.yaml`). */
  readonly file: string;
  /** Environment: secret references (`${secrets:NAME}`, `${env:NAME}`) and SQS endpoint overrides. */
  readonly env?: Readonly<Record<string, string | undefined>>;
  /**
   * Reads a file beside the spicepod (a relative path resolves there): a view's `sql_ref`,
   * `runtime.tls`'s files, the env secret store's dotenv files. Absent: no file can be read.
   */
  readonly readFile?: (path: string) => FileRead;
}

/** A file's text, or why it cannot be read (`ENOENT: no such file or directory`). */
export type FileRead =
  | { readonly text: string; readonly problem?: never }
  | { readonly problem: string; readonly text?: never };

export interface SpicepodLoad {
  readonly file: string;
  /** `undefined` when a fatal (pod-level) error was found. */
  readonly config: SpicepodConfig | undefined;
  /** The valid datasets, in file order; empty when fatal. */
  readonly datasets: readonly DatasetConfig[];
  /** Every error found, in the order found (pod checks, then each dataset, then checks across datasets). */
  readonly errors: readonly ConfigIssue[];
  readonly warnings: readonly ConfigIssue[];
  readonly fatal: boolean;
}
