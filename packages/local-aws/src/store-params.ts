/**
 * How Ferry's own S3 object store reaches the local S3: the `storeParams` the writer
 * (`publishSnapshot`) and `createObjectStore` take, for the quickstart and every test that publishes
 * or reads through Ferry rather than through an SDK client.
 */
import type { LocalAws } from './local-aws.js';

/** Ferry's S3 store params for a static key over plain HTTP (the shape `@ferry/store` reads). */
export interface LocalStoreParams {
  readonly endpoint: string;
  readonly region: string;
  readonly allowHttp: true;
  readonly auth: 'key';
  readonly accessKeyId: string;
  readonly secretAccessKey: string;
}

/** The store params for `aws`: its endpoint (default: the counting one), region and static key. */
export function localStoreParams(aws: LocalAws, endpoint = aws.endpoint): LocalStoreParams {
  return {
    endpoint,
    region: aws.region,
    allowHttp: true,
    auth: 'key',
    accessKeyId: aws.credentials.accessKeyId,
    secretAccessKey: aws.credentials.secretAccessKey,
  };
}
