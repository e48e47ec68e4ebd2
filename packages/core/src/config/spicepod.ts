/**
 * Loading a spicepod: YAML text in, typed config out, with every problem found. Pod-level problems
 * (bad YAML, a bad `snapshots.location`, an unknown top-level key) are fatal; a dataset's problems
 * fail only that dataset, so the others can still be served. Pure: the caller reads the file and
 * passes the environment.
 */
import { LineCounter, parseDocument } from 'yaml';
import { type Location, parseLocation } from '../location.js';
import { NotificationMessages } from '../notifications/messages.js';
import {
  type DatasetDraft,
  MAX_STALENESS_PARAM,
  type PodSnapshots,
  RETAIN_DISK_BUDGET_PARAM,
  RETAIN_SNAPSHOTS_PARAM,
  readDataset,
  readRetainDiskBudget,
  readRetainSnapshots,
} from './dataset.js';
import { ConfigError, IssueSink, Reporter } from './issues.js';
import { parseEndpoint, parseQueueUrl } from './queue-url.js';
import { readRuntimeSection } from './runtime-section.js';
import { readS3Params, S3_PARAM_KEYS } from './s3-params.js';
import { readSecretStores, type SecretSource } from './secrets.js';
import { parseTopicArn } from './sns-topic.js';
import { readTrustedKeys, TRUSTED_KEYS_PARAM } from './trusted-keys.js';
import type {
  BootstrapOnFailure,
  ConfigIssue,
  DatasetConfig,
  LoadSpicepodOptions,
  NotificationsConfig,
  QueueConfig,
  S3Settings,
  SnapshotsConfig,
  SpicepodConfig,
  SpicepodLoad,
} from './types.js';
import { type Env, isMap, readBoolean, readChoice, readDuration, readParam, readText } from './values.js';
import { readViews } from './views.js';

const VERSIONS = ['v1beta1', 'v1', 'v2'];
const TOP_LEVEL_KEYS = ['version', 'kind', 'name', 'snapshots', 'datasets', 'runtime', 'secrets', 'views'];
/**
 * Spice top-level keys a real spicepod may carry; recorded in `ignoredKeys`, never acted on. Each
 * adds something this runtime does not serve (models, tools, …): ignoring it changes neither who may
 * connect nor what a query of the datasets and views returns. See CONFIG.md for each.
 */
const IGNORED_TOP_LEVEL_KEYS = [
  'models',
  'catalogs',
  'metadata',
  'dependencies',
  'embeddings',
  'workers',
  'tools',
  'evals',
  'functions',
];
/** Recorded keys whose absence a query would notice (it names a table or function that is not there). */
const NOTICED_TOP_LEVEL_KEYS: Readonly<Record<string, string>> = {
  catalogs:
    "is not served: this runtime serves the spicepod's snapshot datasets and views only, so a query naming a catalog's table fails as an unknown table",
  functions:
    'is not served: this runtime defines no user functions, so a query calling one fails as an unknown function',
};
const SNAPSHOTS_KEYS = ['enabled', 'location', 'bootstrap_on_failure_behavior', 'params'];
const QUEUE_PARAM = 's3_queue_url';
/** Ferry's own extension: an SQS endpoint override for local servers. */
const QUEUE_ENDPOINT_PARAM = 's3_queue_endpoint';
/**
 * Ferry's own fleet settings (Spice has none of them, hence the `ferry_` prefix): a queue made by
 * each reader and subscribed to this SNS topic, instead of `s3_queue_url`.
 */
const TOPIC_PARAM = 'ferry_sns_topic_arn';
const RAW_DELIVERY_PARAM = 'ferry_sns_raw_message_delivery';
const HEARTBEAT_PARAM = 'ferry_sns_heartbeat_interval';
const TOPIC_OPTION_PARAMS = [RAW_DELIVERY_PARAM, HEARTBEAT_PARAM];
const SNAPSHOTS_PARAM_KEYS = [
  ...S3_PARAM_KEYS,
  MAX_STALENESS_PARAM,
  RETAIN_SNAPSHOTS_PARAM,
  RETAIN_DISK_BUDGET_PARAM,
  QUEUE_PARAM,
  QUEUE_ENDPOINT_PARAM,
  TOPIC_PARAM,
  ...TOPIC_OPTION_PARAMS,
  TRUSTED_KEYS_PARAM,
];
const DEFAULT_HEARTBEAT_MS = 60_000;
const SNS_ENDPOINT_ENV = ['AWS_ENDPOINT_URL_SNS', 'AWS_ENDPOINT_URL'];
const BOOTSTRAP_BEHAVIOURS: readonly BootstrapOnFailure[] = ['warn', 'retry', 'fallback'];
const ENDPOINT_ENV = ['AWS_ENDPOINT_URL_SQS', 'AWS_ENDPOINT_URL'];
const DEFAULT_QUEUE_REGION = 'us-east-1';

/** Loads spicepod YAML `text`; never throws. See {@link throwIfFatal} to stop on pod-level errors. */
export function loadSpicepod(text: string, options: LoadSpicepodOptions): SpicepodLoad {
  const { file } = options;
  const env: Env = options.env ?? {};
  const sink = new IssueSink(file);
  const pod = new Reporter(sink, true);

  const root = parseYaml(pod, text);
  if (root === undefined) return finish(sink, undefined, [], undefined);

  const ignoredKeys: string[] = [];
  for (const key of Object.keys(root)) {
    if (IGNORED_TOP_LEVEL_KEYS.includes(key)) {
      ignoredKeys.push(key);
      const notice = NOTICED_TOP_LEVEL_KEYS[key];
      if (notice !== undefined && root[key] !== null && root[key] !== undefined) pod.warn(key, notice);
    } else if (!TOP_LEVEL_KEYS.includes(key))
      pod.unknownKey(key, key, [...TOP_LEVEL_KEYS, ...IGNORED_TOP_LEVEL_KEYS]);
  }
  const version = readRequired(pod, root, 'version', 'add version: v1');
  if (version !== undefined && !VERSIONS.includes(version)) {
    pod.error('version', `'${version}' is not a Spicepod version this runtime reads; use v1 or v2`);
  }
  const kind = readRequired(pod, root, 'kind', 'add kind: Spicepod');
  if (kind !== undefined && kind !== 'Spicepod')
    pod.error('kind', `'${kind}' is not a Spicepod; set kind: Spicepod`);
  const name = readRequired(pod, root, 'name', 'add a name for the Spicepod');

  const { source: secrets, stores: secretStores } = readSecretStores(
    pod,
    root.secrets,
    env,
    options.readFile,
  );
  const runtime = readRuntimeSection(pod, root.runtime, secrets, options.readFile);
  const snapshots = readSnapshots(pod, root.snapshots, secrets);
  const drafts = readDatasets(pod, sink, root.datasets, snapshots.pod, secrets);
  checkUniqueNames(drafts);
  checkSharedFiles(drafts);
  const queue = resolveQueue(pod, drafts, snapshots, env);
  const views = readViews(
    pod,
    sink,
    root.views,
    drafts.flatMap((draft) => (draft.name === undefined ? [] : [draft.name])),
    options.readFile,
  );

  const valid = drafts.flatMap((draft) =>
    draft.report.failed || draft.config === undefined ? [] : [draft.config],
  );
  const notified = valid.filter((dataset) => dataset.form === 'refresh_mode');
  const location = snapshots.pod.location?.uri;
  const s3 = snapshots.pod.s3;
  const notifications: NotificationsConfig | undefined =
    queue !== undefined && notified.length > 0 && location !== undefined && s3 !== undefined
      ? { queue, location, s3, datasets: notified.map((dataset) => dataset.name) }
      : undefined;
  const datasets = valid.map((dataset) =>
    notifications !== undefined && dataset.form === 'refresh_mode'
      ? { ...dataset, queue: notifications.queue }
      : dataset,
  );

  if (sink.fatal || version === undefined || name === undefined) return finish(sink, undefined, [], secrets);
  const config: SpicepodConfig = {
    file,
    version,
    kind: 'Spicepod',
    name,
    ...(snapshots.config === undefined ? {} : { snapshots: snapshots.config }),
    ...(notifications === undefined ? {} : { notifications }),
    ...(runtime.auth === undefined ? {} : { auth: runtime.auth }),
    ...(runtime.tls === undefined ? {} : { tls: runtime.tls }),
    resultsCache: runtime.resultsCache,
    taskHistory: runtime.taskHistory,
    ...(runtime.cors === undefined ? {} : { cors: runtime.cors }),
    ...(runtime.flightMaxMessageBytes === undefined
      ? {}
      : { flightMaxMessageBytes: runtime.flightMaxMessageBytes }),
    readyState: runtime.readyState,
    ...(runtime.queryTimeoutMs === undefined ? {} : { queryTimeoutMs: runtime.queryTimeoutMs }),
    ...(runtime.streamIdleTimeoutMs === undefined
      ? {}
      : { streamIdleTimeoutMs: runtime.streamIdleTimeoutMs }),
    ...(runtime.maxQueriesInFlight === undefined ? {} : { maxQueriesInFlight: runtime.maxQueriesInFlight }),
    views,
    secretStores,
    secretReferences: secrets.references,
    ignoredKeys,
    ignoredRuntimeKeys: runtime.recordedKeys,
  };
  return finish(sink, config, datasets, secrets);
}

/**
 * Returns the pod's config, or throws a {@link ConfigError} (`ERR_CONFIG`) listing every error when a
 * fatal one was found. Dataset errors alone do not throw: those datasets are simply not served.
 */
export function throwIfFatal(load: SpicepodLoad): SpicepodConfig {
  if (load.config === undefined) throw new ConfigError(load.file, load.errors);
  return load.config;
}

/** Returns the pod's config, or throws a {@link ConfigError} listing every error when there is any. */
export function throwIfInvalid(load: SpicepodLoad): SpicepodConfig {
  if (load.config === undefined || load.errors.length > 0) throw new ConfigError(load.file, load.errors);
  return load.config;
}

/** The load's result; no message shows a secret a reference resolved to (the reference stands in). */
function finish(
  sink: IssueSink,
  config: SpicepodConfig | undefined,
  datasets: readonly DatasetConfig[],
  secrets: SecretSource | undefined,
): SpicepodLoad {
  const redact = (issues: readonly ConfigIssue[]): ConfigIssue[] =>
    issues.map((issue) =>
      secrets === undefined ? issue : { ...issue, message: secrets.redact(issue.message) },
    );
  return {
    file: sink.file,
    config,
    datasets: config === undefined ? [] : datasets,
    errors: redact(sink.errors),
    warnings: redact(sink.warnings),
    fatal: config === undefined,
  };
}

function parseYaml(pod: Reporter, text: string): Record<string, unknown> | undefined {
  const lineCounter = new LineCounter();
  const document = parseDocument(text, { prettyErrors: false, lineCounter });
  if (document.errors.length > 0) {
    for (const error of document.errors) {
      const { line, col } = lineCounter.linePos(error.pos[0]);
      const problem =
        error.code === 'MULTIPLE_DOCS'
          ? "a second YAML document starts here ('---'), but a spicepod is one document; remove it and what follows, or put it in a file of its own"
          : `${error.message}; fix the syntax`;
      pod.error('', `invalid YAML at line ${line}, column ${col}: ${problem}`);
    }
    return undefined;
  }
  let root: unknown;
  try {
    root = document.toJS();
  } catch (error) {
    pod.error('', `invalid YAML: ${error instanceof Error ? error.message : String(error)}; fix the syntax`);
    return undefined;
  }
  if (root === null || root === undefined) {
    pod.error('', 'the file is empty; add version, kind, name and datasets');
    return undefined;
  }
  if (!isMap(root)) {
    pod.error('', 'the top level must be a map of keys (version, kind, name, snapshots, datasets)');
    return undefined;
  }
  return root;
}

function readRequired(
  pod: Reporter,
  root: Record<string, unknown>,
  key: string,
  fix: string,
): string | undefined {
  if (root[key] === undefined || root[key] === null) {
    pod.error(key, `missing; ${fix}`);
    return undefined;
  }
  const value = readText(pod, key, root[key]);
  if (value === '') pod.error(key, `is empty; ${fix}`);
  return value === '' ? undefined : value;
}

interface SnapshotsRead {
  readonly pod: PodSnapshots;
  readonly config?: SnapshotsConfig;
  /** `s3_queue_url` as written ('' when empty). */
  readonly queueUrl?: string;
  readonly queueEndpoint?: string;
  /** `ferry_sns_topic_arn` as written ('' when empty), with its options. */
  readonly topic?: {
    readonly arn: string;
    readonly rawMessageDelivery: boolean;
    readonly heartbeatIntervalMs: number;
  };
}

function readSnapshots(pod: Reporter, block: unknown, secrets: SecretSource): SnapshotsRead {
  const none: SnapshotsRead = { pod: { enabled: true, locationBroken: false, bootstrapOnFailure: 'warn' } };
  // A key without a value is no block, as Spice reads its Option<Snapshots>.
  if (block === undefined || block === null) return none;
  if (!isMap(block)) {
    pod.error('snapshots', 'must be a map (enabled, location, bootstrap_on_failure_behavior, params)');
    return { pod: { ...none.pod, locationBroken: true } };
  }
  for (const key of Object.keys(block)) {
    if (!SNAPSHOTS_KEYS.includes(key)) pod.unknownKey(`snapshots.${key}`, key, SNAPSHOTS_KEYS);
  }
  const enabled =
    block.enabled === undefined ? true : (readBoolean(pod, 'snapshots.enabled', block.enabled) ?? true);

  let location: Location | undefined;
  let locationBroken = false;
  if (block.location !== undefined) {
    const text = readText(pod, 'snapshots.location', block.location);
    const parsed = text === undefined ? undefined : parseLocation(text);
    if (parsed === undefined || 'problem' in parsed) {
      if (parsed !== undefined) pod.error('snapshots.location', parsed.problem);
      locationBroken = true;
    } else location = parsed;
  }
  const bootstrapOnFailure =
    block.bootstrap_on_failure_behavior === undefined
      ? 'warn'
      : (readChoice(
          pod,
          'snapshots.bootstrap_on_failure_behavior',
          block.bootstrap_on_failure_behavior,
          BOOTSTRAP_BEHAVIOURS,
        ) ?? 'warn');

  const params = block.params ?? {};
  let s3: S3Settings | undefined;
  let queueUrl: string | undefined;
  let queueEndpoint: string | undefined;
  let topic: SnapshotsRead['topic'];
  let trustedKeys: SnapshotsConfig['trustedKeys'];
  let maxStalenessMs: number | undefined;
  let retainSnapshots: number | undefined;
  let retainDiskBudgetBytes: number | undefined;
  if (!isMap(params)) {
    pod.error('snapshots.params', 'must be a map of parameters');
  } else {
    for (const key of Object.keys(params)) {
      if (!SNAPSHOTS_PARAM_KEYS.includes(key))
        pod.unknownKey(`snapshots.params.${key}`, key, SNAPSHOTS_PARAM_KEYS);
    }
    if (location?.scheme === 'file') {
      for (const key of S3_PARAM_KEYS) {
        if (Object.hasOwn(params, key)) {
          pod.warn(`snapshots.params.${key}`, 'ignored because snapshots.location is file://');
        }
      }
    } else {
      s3 = readS3Params(pod, 'snapshots.params', params, secrets);
    }
    if (Object.hasOwn(params, QUEUE_PARAM)) {
      const raw = params[QUEUE_PARAM];
      queueUrl =
        raw === null || raw === '' ? '' : readParam(pod, `snapshots.params.${QUEUE_PARAM}`, raw, secrets);
    }
    if (Object.hasOwn(params, QUEUE_ENDPOINT_PARAM)) {
      const path = `snapshots.params.${QUEUE_ENDPOINT_PARAM}`;
      const text = readParam(pod, path, params[QUEUE_ENDPOINT_PARAM], secrets);
      const parsed = text === undefined ? undefined : parseEndpoint(text);
      if (text !== undefined && parsed === undefined) {
        pod.error(
          path,
          `'${text}' is not an http(s) URL; use the SQS server's URL, such as http://127.0.0.1:4566`,
        );
      }
      queueEndpoint = parsed?.url;
    }
    topic = readTopic(pod, params, secrets);
    if (Object.hasOwn(params, TRUSTED_KEYS_PARAM)) {
      const path = `snapshots.params.${TRUSTED_KEYS_PARAM}`;
      trustedKeys = readTrustedKeys(pod, path, params[TRUSTED_KEYS_PARAM], secrets);
    }
    if (Object.hasOwn(params, MAX_STALENESS_PARAM)) {
      const path = `snapshots.params.${MAX_STALENESS_PARAM}`;
      maxStalenessMs = readDuration(pod, path, params[MAX_STALENESS_PARAM]);
    }
    if (Object.hasOwn(params, RETAIN_SNAPSHOTS_PARAM)) {
      const path = `snapshots.params.${RETAIN_SNAPSHOTS_PARAM}`;
      retainSnapshots = readRetainSnapshots(pod, path, params[RETAIN_SNAPSHOTS_PARAM]);
    }
    if (Object.hasOwn(params, RETAIN_DISK_BUDGET_PARAM)) {
      const path = `snapshots.params.${RETAIN_DISK_BUDGET_PARAM}`;
      retainDiskBudgetBytes = readRetainDiskBudget(pod, path, params[RETAIN_DISK_BUDGET_PARAM]);
    }
  }

  const s3ForLocation = location?.scheme === 's3' ? s3 : undefined;
  const config: SnapshotsConfig = {
    enabled,
    ...(location === undefined ? {} : { location: location.uri }),
    bootstrapOnFailure,
    ...(s3ForLocation === undefined ? {} : { s3: s3ForLocation }),
    ...(queueUrl === undefined ? {} : { queueUrl }),
    ...(topic === undefined ? {} : { topicArn: topic.arn }),
    ...(trustedKeys === undefined ? {} : { trustedKeys }),
  };
  return {
    pod: {
      enabled,
      ...(location === undefined ? {} : { location }),
      locationBroken,
      bootstrapOnFailure,
      ...(s3ForLocation === undefined ? {} : { s3: s3ForLocation }),
      ...(trustedKeys === undefined ? {} : { trustedKeys }),
      ...(maxStalenessMs === undefined ? {} : { maxStalenessMs }),
      ...(retainSnapshots === undefined ? {} : { retainSnapshots }),
      ...(retainDiskBudgetBytes === undefined ? {} : { retainDiskBudgetBytes }),
    },
    config,
    ...(queueUrl === undefined ? {} : { queueUrl }),
    ...(queueEndpoint === undefined ? {} : { queueEndpoint }),
    ...(topic === undefined ? {} : { topic }),
  };
}

/** `ferry_sns_topic_arn` as written, with its two options; the options alone are an error. */
function readTopic(
  pod: Reporter,
  params: Record<string, unknown>,
  secrets: SecretSource,
): SnapshotsRead['topic'] {
  const base = 'snapshots.params';
  if (!Object.hasOwn(params, TOPIC_PARAM)) {
    for (const key of TOPIC_OPTION_PARAMS) {
      if (Object.hasOwn(params, key)) {
        pod.error(
          `${base}.${key}`,
          `only applies with ${base}.${TOPIC_PARAM} (Ferry's per-reader queues), which is not set; set the topic or remove ${key}`,
        );
      }
    }
    return undefined;
  }
  const raw = params[TOPIC_PARAM];
  const arn =
    raw === null || raw === '' ? '' : (readParam(pod, `${base}.${TOPIC_PARAM}`, raw, secrets) ?? '');
  const rawMessageDelivery = Object.hasOwn(params, RAW_DELIVERY_PARAM)
    ? (readBoolean(pod, `${base}.${RAW_DELIVERY_PARAM}`, params[RAW_DELIVERY_PARAM]) ?? true)
    : true;
  const heartbeatIntervalMs = Object.hasOwn(params, HEARTBEAT_PARAM)
    ? (readDuration(pod, `${base}.${HEARTBEAT_PARAM}`, params[HEARTBEAT_PARAM]) ?? DEFAULT_HEARTBEAT_MS)
    : DEFAULT_HEARTBEAT_MS;
  return { arn, rawMessageDelivery, heartbeatIntervalMs };
}

function readDatasets(
  pod: Reporter,
  sink: IssueSink,
  list: unknown,
  snapshots: PodSnapshots,
  secrets: SecretSource,
): DatasetDraft[] {
  if (list !== undefined && list !== null && !Array.isArray(list)) {
    pod.error('datasets', 'must be a list of datasets');
    return [];
  }
  if (!Array.isArray(list) || list.length === 0) {
    pod.warn(
      'datasets',
      'no datasets are defined, so nothing will be served; add a dataset with refresh_mode: snapshot',
    );
    return [];
  }
  return list.map((entry, index) =>
    readDataset(new Reporter(sink, false), index, entry, { pod: snapshots, secrets }),
  );
}

function checkUniqueNames(drafts: readonly DatasetDraft[]): void {
  const byName = groupBy(drafts, (draft) => draft.name?.toLowerCase());
  for (const group of byName.values()) {
    if (group.length < 2) continue;
    const where = describeIndexes(group.map((draft) => draft.index));
    for (const draft of group) {
      draft.report.error(
        `datasets[${draft.index}].name`,
        `'${draft.name}' names ${where}; give each dataset a unique name`,
      );
    }
  }
}

function checkSharedFiles(drafts: readonly DatasetDraft[]): void {
  const byFile = groupBy(drafts, (draft) => draft.live?.file);
  for (const [file, group] of byFile) {
    if (group.length < 2) continue;
    const where = describeIndexes(group.map((draft) => draft.index));
    for (const draft of group) {
      draft.report.error(
        draft.live?.path ?? `datasets[${draft.index}]`,
        `'${file}' is the live file of ${where}; give each dataset its own file`,
      );
    }
  }
}

function groupBy<K>(
  drafts: readonly DatasetDraft[],
  key: (draft: DatasetDraft) => K | undefined,
): Map<K, DatasetDraft[]> {
  const groups = new Map<K, DatasetDraft[]>();
  for (const draft of drafts) {
    const k = key(draft);
    if (k === undefined) continue;
    groups.set(k, [...(groups.get(k) ?? []), draft]);
  }
  return groups;
}

function describeIndexes(indexes: readonly number[]): string {
  const names = indexes.map((index) => `datasets[${index}]`);
  return `${names.slice(0, -1).join(', ')} and ${names[names.length - 1]}`;
}

/**
 * Validates `s3_queue_url` against the datasets that would read it (Spice's rule: a bad queue
 * fails every `refresh_mode: snapshot` dataset; an unused one is only a warning).
 */
function resolveQueue(
  pod: Reporter,
  drafts: readonly DatasetDraft[],
  snapshots: SnapshotsRead,
  env: Env,
): QueueConfig | undefined {
  const key = snapshots.topic !== undefined ? TOPIC_PARAM : QUEUE_PARAM;
  if (snapshots.queueUrl === undefined && snapshots.topic === undefined) return undefined;
  const readers = drafts.filter((draft) => draft.form === 'refresh_mode');
  const path = `snapshots.params.${key}`;
  if (readers.length === 0) {
    // Spice's warning, word for word (operators grep for it); Ferry's own key has its own.
    pod.warn(
      path,
      key === QUEUE_PARAM
        ? NotificationMessages.queueUnused()
        : `is set, but no dataset uses refresh_mode: snapshot, so no SQS queue is made or subscribed to the topic; set refresh_mode: snapshot on the datasets that load snapshots, or remove ${TOPIC_PARAM}`,
    );
    return undefined;
  }
  const fail = (clause: (dataset: string) => string): undefined => {
    for (const draft of readers) draft.report.error(path, clause(draft.name ?? `datasets[${draft.index}]`));
    return undefined;
  };
  if (snapshots.queueUrl !== undefined && snapshots.topic !== undefined) {
    return fail(
      (dataset) =>
        `is set together with snapshots.params.${QUEUE_PARAM}, so dataset '${dataset}' cannot load; keep one: ${QUEUE_PARAM} for a queue you made for this reader, or ${TOPIC_PARAM} for a queue each reader makes and subscribes to the topic`,
    );
  }
  const endpoint = snapshots.queueEndpoint ?? endpointFromEnv(pod, env, ENDPOINT_ENV);
  const parsed =
    snapshots.topic !== undefined
      ? parseTopicArn(snapshots.topic.arn)
      : parseQueueUrl(snapshots.queueUrl ?? '', { endpointOverride: endpoint !== undefined });
  if ('problem' in parsed) {
    return fail((dataset) => `${parsed.problem}, so dataset '${dataset}' cannot load; ${parsed.fix}`);
  }
  const location = snapshots.pod.location;
  if (location !== undefined && location.scheme !== 's3') {
    return fail(
      (dataset) =>
        `is set, but snapshots.location '${location.uri}' is not s3://, so dataset '${dataset}' cannot load; remove ${key} (S3 event notifications need an s3:// location)`,
    );
  }
  const overrides = endpoint === undefined ? {} : { endpoint };
  if ('arn' in parsed && snapshots.topic !== undefined) {
    const snsEndpoint = endpointFromEnv(pod, env, SNS_ENDPOINT_ENV);
    return {
      topic: {
        arn: parsed.arn,
        region: parsed.region,
        rawMessageDelivery: snapshots.topic.rawMessageDelivery,
        heartbeatIntervalMs: snapshots.topic.heartbeatIntervalMs,
        ...(snsEndpoint === undefined ? {} : { endpoint: snsEndpoint }),
      },
      region: parsed.region,
      ...overrides,
    };
  }
  if (!('url' in parsed)) return undefined;
  const region = parsed.region ?? snapshots.pod.s3?.region ?? DEFAULT_QUEUE_REGION;
  // A FIPS or VPC endpoint queue is read at its own host (an override still wins).
  const queueEndpoint = endpoint ?? parsed.endpoint;
  return { url: parsed.url, region, ...(queueEndpoint === undefined ? {} : { endpoint: queueEndpoint }) };
}

function endpointFromEnv(pod: Reporter, env: Env, names: readonly string[]): string | undefined {
  for (const name of names) {
    const value = env[name]?.trim();
    if (value === undefined || value === '') continue;
    const parsed = parseEndpoint(value);
    if (parsed === undefined) {
      pod.error(
        name,
        `the environment variable's value '${value}' is not an http(s) URL; fix it or unset it`,
      );
      return undefined;
    }
    return parsed.url;
  }
  return undefined;
}
