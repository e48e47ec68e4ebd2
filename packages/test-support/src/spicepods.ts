/**
 * Spicepod YAML for tests: one `snapshots` block (a location, its params) and form-1 datasets
 * (`refresh_mode: snapshot`), so a test states only what it is about. `localS3Params` gives the
 * params that reach the local S3 (fauxqs) with its static credentials.
 */
import type { BootstrapOnFailure, EngineName } from '@ferry/core/base';
import type { LocalAws } from '@ferry/local-aws';

export interface SpicepodDatasetSpec {
  readonly name: string;
  readonly engine: EngineName;
  /** `refresh_check_interval`; absent: the default (1m). */
  readonly interval?: string;
  /** `acceleration.snapshots`; default `enabled`. */
  readonly snapshots?: 'enabled' | 'bootstrap_only';
}

export interface SpicepodSpec {
  /** Default `test`. */
  readonly name?: string;
  /** `snapshots.location`. */
  readonly location: string;
  /** `snapshots.bootstrap_on_failure_behavior`; absent: not written (the default, `warn`). */
  readonly bootstrapOnFailure?: BootstrapOnFailure;
  /** `snapshots.params`, in order; none: no `params` key. */
  readonly params?: Readonly<Record<string, string | boolean>>;
  readonly datasets: readonly SpicepodDatasetSpec[];
}

export function spicepodYaml(spec: SpicepodSpec): string {
  const params = Object.entries(spec.params ?? {});
  const lines = [
    'version: v1',
    'kind: Spicepod',
    `name: ${spec.name ?? 'test'}`,
    'snapshots:',
    `  location: ${spec.location}`,
    ...(spec.bootstrapOnFailure === undefined
      ? []
      : [`  bootstrap_on_failure_behavior: ${spec.bootstrapOnFailure}`]),
    ...(params.length === 0 ? [] : ['  params:', ...params.map(([key, value]) => `    ${key}: ${value}`)]),
    'datasets:',
  ];
  for (const dataset of spec.datasets) {
    lines.push(
      `  - from: postgres:public.${dataset.name}`,
      `    name: ${dataset.name}`,
      '    acceleration:',
      `      engine: ${dataset.engine}`,
      '      mode: file',
      '      refresh_mode: snapshot',
      ...(dataset.interval === undefined ? [] : [`      refresh_check_interval: ${dataset.interval}`]),
      `      snapshots: ${dataset.snapshots ?? 'enabled'}`,
    );
  }
  return `${lines.join('\n')}\n`;
}

/** `snapshots.params` for the local S3: its endpoint (default: the counting one), region and static key. */
export function localS3Params(aws: LocalAws, endpoint = aws.endpoint): Record<string, string | boolean> {
  return {
    s3_endpoint: endpoint,
    allow_http: true,
    s3_region: aws.region,
    s3_auth: 'key',
    s3_key: aws.credentials.accessKeyId,
    s3_secret: aws.credentials.secretAccessKey,
  };
}
