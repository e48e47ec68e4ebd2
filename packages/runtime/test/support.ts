/**
 * Shared setup of the runtime's integration tests: a real local S3 + SQS (fauxqs), a bucket, a
 * publisher using the real writer, spicepods pointing at them, and waiting on runtime events.
 */
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { LocalAws } from '@ferry/test-support';
import { type PublishResult, publishSnapshot } from '@ferry/writer';
import type { Runtime, RuntimeEvents } from '../src/index.js';

export const BUCKET = 'ferry-runtime';

export function location(prefix = 'snapshots/'): string {
  return `s3://${BUCKET}/${prefix}`;
}

export function storeParams(aws: LocalAws) {
  return {
    endpoint: aws.endpoint,
    region: aws.region,
    allowHttp: true,
    auth: 'key' as const,
    accessKeyId: aws.credentials.accessKeyId,
    secretAccessKey: aws.credentials.secretAccessKey,
  };
}

/** Publishes `rows` rows of `(id, version)` all carrying `version`, so a result shows which snapshot it read. */
export function publishVersion(
  aws: LocalAws,
  dataset: string,
  engine: 'duckdb' | 'sqlite',
  version: number,
  options: { rows?: number; prefix?: string } = {},
): Promise<PublishResult> {
  const rows = options.rows ?? 100;
  return publishSnapshot({
    dataset,
    engine,
    location: location(options.prefix),
    storeParams: storeParams(aws),
    source: { sql: `SELECT i::BIGINT AS id, ${version}::BIGINT AS version FROM range(${rows}) t(i)` },
    notNull: ['id'],
  });
}

export interface DatasetSpec {
  readonly name: string;
  readonly engine: 'duckdb' | 'sqlite';
  readonly interval?: string;
}

export function spicepod(
  aws: LocalAws,
  datasets: readonly DatasetSpec[],
  extra: { queueUrl?: string; prefix?: string } = {},
): string {
  const lines = [
    'version: v1',
    'kind: Spicepod',
    'name: runtime-test',
    'snapshots:',
    `  location: ${location(extra.prefix)}`,
    '  params:',
    `    s3_endpoint: ${aws.endpoint}`,
    '    allow_http: true',
    `    s3_region: ${aws.region}`,
    '    s3_auth: key',
    `    s3_key: ${aws.credentials.accessKeyId}`,
    `    s3_secret: ${aws.credentials.secretAccessKey}`,
    ...(extra.queueUrl === undefined ? [] : [`    s3_queue_url: ${extra.queueUrl}`]),
    'datasets:',
  ];
  for (const dataset of datasets) {
    lines.push(
      `  - from: postgres:public.${dataset.name}`,
      `    name: ${dataset.name}`,
      '    acceleration:',
      `      engine: ${dataset.engine}`,
      '      mode: file',
      '      refresh_mode: snapshot',
      `      refresh_check_interval: ${dataset.interval ?? '1s'}`,
      '      snapshots: enabled',
    );
  }
  return `${lines.join('\n')}\n`;
}

export function tempDir(prefix: string): Promise<string> {
  return mkdtemp(join(tmpdir(), prefix));
}

/** Resolves with the first event of `kind` that satisfies `predicate` (no polling, no sleeps). */
export function nextEvent<K extends keyof RuntimeEvents>(
  runtime: Runtime,
  kind: K,
  predicate: (payload: RuntimeEvents[K]) => boolean = () => true,
  timeoutMs = 30_000,
): Promise<RuntimeEvents[K]> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      off();
      reject(new Error(`no '${kind}' event matched within ${timeoutMs} ms`));
    }, timeoutMs);
    const off = runtime.on(kind, (payload) => {
      if (!predicate(payload)) return;
      clearTimeout(timer);
      off();
      resolve(payload);
    });
  });
}
