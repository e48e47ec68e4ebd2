/**
 * An S3 store's options and the SDK client config they make, checked without loading the SDK (its
 * types only): `createObjectStore` checks an `s3://` location when it is configured and loads the
 * client on the store's first request.
 */
import type { S3ClientConfig } from '@aws-sdk/client-s3';
import { parseLocation } from '@ferry/core/base';
import { StoreConfigError } from './errors.js';

/** Part size of multipart uploads (and the single-PUT limit), 8 MiB. */
export const DEFAULT_PART_SIZE = 8 * 1024 * 1024;

/** `client_timeout` when a spicepod does not set it. */
export const DEFAULT_CLIENT_TIMEOUT_MS = 30_000;

export interface S3StoreOptions {
  /** `s3://bucket/prefix/`. */
  readonly location: string;
  /** Default: `AWS_REGION`, `AWS_DEFAULT_REGION`, else `us-east-1`. */
  readonly region?: string;
  /** An S3-compatible endpoint (`https://minio.local:9000`); implies path-style addressing. */
  readonly endpoint?: string;
  /** `key`: static credentials (required); `iam_role`: the SDK default chain. Default: `key` when both are given. */
  readonly auth?: 'iam_role' | 'key';
  readonly accessKeyId?: string;
  readonly secretAccessKey?: string;
  readonly sessionToken?: string;
  /** Permit an `http://` endpoint. */
  readonly allowHttp?: boolean;
  /**
   * Bounds connecting, the wait for an answer and a stalled body (socket inactivity), each; a long
   * download that keeps moving is not cut. Default {@link DEFAULT_CLIENT_TIMEOUT_MS}.
   */
  readonly clientTimeoutMs?: number;
  /** Default: true when `endpoint` is set. */
  readonly forcePathStyle?: boolean;
  /** SDK attempts per request (retries on throttling, 5xx, network errors). Default: the SDK's (3). */
  readonly maxAttempts?: number;
  /** Multipart part size, at least 5 MiB. Default 8 MiB. */
  readonly partSize?: number;
}

function resolveCredentials(
  options: S3StoreOptions,
): Pick<S3ClientConfig, 'credentials'> | Record<string, never> {
  const hasKey = options.accessKeyId !== undefined && options.accessKeyId !== '';
  const hasSecret = options.secretAccessKey !== undefined && options.secretAccessKey !== '';
  if (options.auth === 'iam_role') return {};
  if (hasKey !== hasSecret || (options.auth === 'key' && !(hasKey && hasSecret))) {
    throw new StoreConfigError(
      hasKey ? 's3_secret' : 's3_key',
      `S3 location ${options.location} has ${hasKey ? 's3_key without s3_secret' : 's3_auth: key without s3_key'}; set both s3_key and s3_secret, or use s3_auth: iam_role for the default credential chain.`,
    );
  }
  if (!hasKey || options.accessKeyId === undefined || options.secretAccessKey === undefined) return {};
  return {
    credentials: {
      accessKeyId: options.accessKeyId,
      secretAccessKey: options.secretAccessKey,
      ...(options.sessionToken === undefined || options.sessionToken === ''
        ? {}
        : { sessionToken: options.sessionToken }),
    },
  };
}

/** Build the SDK client config for these options, refusing unusable ones. */
export function s3ClientConfig(options: S3StoreOptions): S3ClientConfig {
  const endpoint = options.endpoint === '' ? undefined : options.endpoint;
  if (endpoint !== undefined) {
    let url: URL;
    try {
      url = new URL(endpoint);
    } catch (cause) {
      throw new StoreConfigError(
        's3_endpoint',
        `s3_endpoint '${endpoint}' is not a URL; give it as https://host[:port].`,
        { cause },
      );
    }
    if (url.protocol === 'http:' && options.allowHttp !== true) {
      throw new StoreConfigError(
        'allow_http',
        `s3_endpoint '${endpoint}' uses plain http; use https, or set allow_http: true to accept an unencrypted connection.`,
      );
    }
    if (url.protocol !== 'http:' && url.protocol !== 'https:') {
      throw new StoreConfigError('s3_endpoint', `s3_endpoint '${endpoint}' must be an http(s):// URL.`);
    }
  }
  const timeout = options.clientTimeoutMs ?? DEFAULT_CLIENT_TIMEOUT_MS;
  return {
    region: options.region ?? process.env.AWS_REGION ?? process.env.AWS_DEFAULT_REGION ?? 'us-east-1',
    ...resolveCredentials(options),
    ...(endpoint === undefined
      ? {}
      : {
          endpoint,
          // S3-compatible stores commonly reject the SDK's default flexible checksums.
          requestChecksumCalculation: 'WHEN_REQUIRED' as const,
          responseChecksumValidation: 'WHEN_REQUIRED' as const,
        }),
    forcePathStyle: options.forcePathStyle ?? endpoint !== undefined,
    ...(options.maxAttempts === undefined ? {} : { maxAttempts: options.maxAttempts }),
    // requestTimeout bounds the wait for an answer (the SDK only warns unless told to throw);
    // socketTimeout bounds a body that stalls mid-download.
    requestHandler: {
      connectionTimeout: timeout,
      requestTimeout: timeout,
      throwOnRequestTimeout: true,
      socketTimeout: timeout,
    },
  };
}

/** What {@link checkS3Options} read from the options: where the store is and its client's config. */
export interface CheckedS3Options {
  readonly bucket: string;
  readonly prefix: string;
  /** The location as `s3://bucket/prefix/`. */
  readonly location: string;
  readonly partSize: number;
  readonly config: S3ClientConfig;
}

/**
 * Read and check an S3 store's options, refusing unusable ones (a location that is no
 * `s3://bucket/prefix/`, a part size below S3's minimum, a bad endpoint or half a key pair) with a
 * {@link StoreConfigError} naming the key. Loads no SDK: a store is checked when it is configured.
 */
export function checkS3Options(options: S3StoreOptions): CheckedS3Options {
  const parsed = parseLocation(options.location);
  if ('problem' in parsed || parsed.scheme !== 's3') {
    const why = 'problem' in parsed ? ` (${parsed.problem})` : '';
    throw new StoreConfigError(
      'location',
      `Store location '${options.location}' is not an s3://bucket/prefix/ URI${why}; give the bucket and an optional prefix.`,
    );
  }
  const partSize = options.partSize ?? DEFAULT_PART_SIZE;
  if (partSize < 5 * 1024 * 1024) {
    throw new StoreConfigError('partSize', `S3 part size ${partSize} is below S3's 5 MiB minimum; raise it.`);
  }
  return {
    bucket: parsed.bucket,
    prefix: parsed.prefix,
    location: parsed.uri,
    partSize,
    config: s3ClientConfig(options),
  };
}
