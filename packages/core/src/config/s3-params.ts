/**
 * The S3 connection params a snapshot location is read with, shared by `snapshots.params` and
 * the `params` of a `file_format: snapshot` dataset (Spice's S3 connector names). Snapshots
 * default to `s3_auth: iam_role`, as in Spice; `key` is assumed when both `s3_key` and
 * `s3_secret` are given without `s3_auth`.
 */
import type { Reporter } from './issues.js';
import { parseEndpoint } from './queue-url.js';
import type { SecretSource } from './secrets.js';
import type { S3Auth, S3Settings } from './types.js';
import { readBoolean, readDuration, readParam } from './values.js';

export const S3_PARAM_KEYS = [
  's3_region',
  's3_endpoint',
  's3_auth',
  's3_key',
  's3_secret',
  's3_session_token',
  'allow_http',
  'client_timeout',
] as const;

const S3_AUTHS: readonly S3Auth[] = ['iam_role', 'key'];

/**
 * Reads the S3 params present in `params` (other keys are the caller's). Returns `undefined` when
 * one of them is wrong (each problem is reported).
 */
export function readS3Params(
  report: Reporter,
  prefix: string,
  params: Readonly<Record<string, unknown>>,
  secrets: SecretSource,
): S3Settings | undefined {
  const at = (key: string): string => `${prefix}.${key}`;
  const has = (key: string): boolean => Object.hasOwn(params, key);
  let ok = true;
  /** Keys set to a value that could not be read (an unset secret, a list): already reported. */
  const unread = new Set<string>();
  const text = (key: string): string | undefined => {
    if (!has(key)) return undefined;
    // A secret's surrounding whitespace (a file's trailing newline) is no part of any S3 param.
    const value = readParam(report, at(key), params[key], secrets)?.trim();
    if (value === undefined) {
      ok = false;
      unread.add(key);
    }
    return value;
  };

  const region = text('s3_region');
  if (region === '') {
    report.error(at('s3_region'), 'is empty; set a region such as us-east-1 or remove it');
    ok = false;
  }
  const endpointText = text('s3_endpoint');
  const key = text('s3_key');
  const secret = text('s3_secret');
  const sessionToken = text('s3_session_token');
  let auth: S3Auth | undefined;
  if (has('s3_auth')) {
    const value = readParam(report, at('s3_auth'), params.s3_auth, secrets)?.trim();
    if (value === undefined) ok = false;
    else if (S3_AUTHS.includes(value as S3Auth)) auth = value as S3Auth;
    else {
      report.error(at('s3_auth'), `'${value}' is not supported for snapshots; use iam_role or key`);
      ok = false;
    }
  }
  let allowHttp = false;
  let allowHttpValid = true;
  if (has('allow_http')) {
    const value = readBoolean(report, at('allow_http'), params.allow_http);
    if (value === undefined) allowHttpValid = false;
    else allowHttp = value;
  }
  let clientTimeoutMs: number | undefined;
  if (has('client_timeout')) {
    clientTimeoutMs = readDuration(report, at('client_timeout'), params.client_timeout);
    if (clientTimeoutMs === undefined) ok = false;
  }

  let endpoint: string | undefined;
  if (endpointText !== undefined) {
    const parsed = parseEndpoint(endpointText);
    if (parsed === undefined) {
      report.error(
        at('s3_endpoint'),
        `'${endpointText}' is not an http(s) URL; use one such as https://s3.example.com or http://127.0.0.1:9000`,
      );
      ok = false;
    } else if (parsed.http && !allowHttp && allowHttpValid) {
      report.error(
        at('s3_endpoint'),
        `'${endpointText}' uses http, which needs allow_http: true; set allow_http: true or use https`,
      );
      ok = false;
    } else endpoint = parsed.url;
  }

  const keyGiven = key !== undefined && key !== '';
  const secretGiven = secret !== undefined && secret !== '';
  // Set but unreadable counts as set: its own error says what to fix, so none is added here.
  const keyPresent = keyGiven || unread.has('s3_key');
  const secretPresent = secretGiven || unread.has('s3_secret');
  const resolvedAuth: S3Auth = auth ?? (keyGiven && secretGiven ? 'key' : 'iam_role');
  if (resolvedAuth === 'key') {
    if (!keyPresent)
      report.error(at('s3_key'), 's3_auth is key, but s3_key is not set; set s3_key and s3_secret');
    if (!secretPresent)
      report.error(at('s3_secret'), 's3_auth is key, but s3_secret is not set; set s3_key and s3_secret');
    if (!keyGiven || !secretGiven) ok = false;
  } else if (auth === 'iam_role') {
    for (const name of ['s3_key', 's3_secret', 's3_session_token'] as const) {
      if (has(name)) {
        report.error(
          at(name),
          `s3_auth is iam_role, so ${name} would be ignored; set s3_auth: key or remove ${name}`,
        );
        ok = false;
      }
    }
  } else if (keyPresent !== secretPresent) {
    const [present, missing] = keyPresent ? ['s3_key', 's3_secret'] : ['s3_secret', 's3_key'];
    report.error(
      at(missing),
      `${present} is set but ${missing} is not; set both, or neither to use the default AWS credential chain`,
    );
    ok = false;
  } else if (!keyPresent && sessionToken !== undefined) {
    report.error(
      at('s3_session_token'),
      's3_session_token is set without s3_key and s3_secret; set them too or remove s3_session_token',
    );
    ok = false;
  }

  if (!ok || !allowHttpValid) return undefined;
  return {
    ...(region === undefined ? {} : { region }),
    ...(endpoint === undefined ? {} : { endpoint }),
    auth: resolvedAuth,
    ...(resolvedAuth === 'key' && key !== undefined && secret !== undefined
      ? {
          credentials: {
            accessKeyId: key,
            secretAccessKey: secret,
            ...(sessionToken === undefined || sessionToken === '' ? {} : { sessionToken }),
          },
        }
      : {}),
    allowHttp,
    ...(clientTimeoutMs === undefined ? {} : { clientTimeoutMs }),
  };
}
