/**
 * The S3 adapter of the `ObjectStore` port (AWS SDK v3), also for S3-compatible stores through
 * `endpoint`. Conditional reads use If-None-Match (a 304 transfers no body), conditional writes use
 * If-Match / If-None-Match on PutObject or CompleteMultipartUpload, and bodies larger than one part
 * go up as a multipart upload (@aws-sdk/lib-storage's `Upload`), so a reader never sees a partial
 * object.
 */
import { createRequire } from 'node:module';
import { Readable } from 'node:stream';
import type * as S3Sdk from '@aws-sdk/client-s3';
import type { ListObjectsV2CommandOutput } from '@aws-sdk/client-s3';
import {
  assertKey,
  assertPrefix,
  FerryError,
  type GetOptions,
  type GetResult,
  keyProblem,
  type ObjectInfo,
  type ObjectStore,
  type PutOptions,
  type ReadOptions,
} from '@ferry/core/base';
import {
  ObjectNotFoundError,
  ObjectTooLargeError,
  PreconditionFailedError,
  StoreError,
  type StoreOperation,
} from './errors.js';
import { checkS3Options, type S3StoreOptions } from './s3-config.js';

// CommonJS, loaded with `require`: an ESM `import` of it has Node's CommonJS lexer read the SDK's
// files first, ~40–90 ms of CPU in each thread that loads it (bench/RESULTS.md, "Start-up: CommonJS
// packages loaded with require").
const require = createRequire(import.meta.url);
const { DeleteObjectCommand, GetObjectCommand, HeadObjectCommand, ListObjectsV2Command, S3Client } =
  require('@aws-sdk/client-s3') as typeof S3Sdk;
type S3Client = InstanceType<typeof S3Client>;

export * from './s3-config.js';

const MAX_PARTS = 10_000;
const UPLOAD_CONCURRENCY = 4;

export interface S3ObjectStore extends ObjectStore {
  readonly bucket: string;
  readonly prefix: string;
  /** The SDK client (for middleware, e.g. fault injection in tests). */
  readonly client: S3Client;
}

interface SdkError {
  readonly name?: string;
  readonly message?: string;
  readonly $metadata?: { readonly httpStatusCode?: number };
}

function statusOf(error: unknown): number | undefined {
  return (error as SdkError | undefined)?.$metadata?.httpStatusCode;
}

function isNotFound(error: unknown): boolean {
  const name = (error as SdkError | undefined)?.name;
  return statusOf(error) === 404 || name === 'NoSuchKey' || name === 'NotFound';
}

const TRANSIENT_ERRNO = new Set([
  'ECONNRESET',
  'ECONNREFUSED',
  'ETIMEDOUT',
  'EPIPE',
  'ENOTFOUND',
  'EAI_AGAIN',
]);

/** Throttling, server errors, timeouts and network failures may succeed later; the rest will not. */
function isRetryable(error: unknown, status: number | undefined): boolean {
  const e = (error ?? {}) as SdkError & { readonly code?: string };
  if (status !== undefined) return status === 429 || status >= 500 || e.name === 'RequestTimeout';
  return (
    e.$metadata !== undefined ||
    e.name === 'TimeoutError' ||
    (typeof e.code === 'string' && TRANSIENT_ERRNO.has(e.code))
  );
}

function signalOption(signal: AbortSignal | undefined): { abortSignal?: AbortSignal } {
  return signal === undefined ? {} : { abortSignal: signal };
}

/** The chunks of an SDK body stream (a Node Readable, or a web stream elsewhere). */
function chunksOf(body: unknown): AsyncIterable<Uint8Array> {
  if (body !== null && typeof body === 'object' && Symbol.asyncIterator in body) {
    return body as AsyncIterable<Uint8Array>;
  }
  const web = (body as { transformToWebStream?: () => ReadableStream<Uint8Array> }).transformToWebStream?.();
  if (web === undefined) throw new TypeError('S3 returned a body that is not a stream');
  return web as unknown as AsyncIterable<Uint8Array>;
}

function destroyBody(body: unknown): void {
  (body as { destroy?: () => void } | undefined)?.destroy?.();
}

/** One plain Uint8Array holding the chunks (never a view into a shared socket buffer). */
/**
 * A whole body in one buffer, each chunk copied in as it arrives and let go: sized once by
 * Content-Length when the server sent it (metadata.json grows without end by the store contract,
 * so its reads must not hold every chunk and a second copy at once). `refuse` checks each running total.
 */
async function readWhole(
  chunks: AsyncIterable<Uint8Array>,
  expected: number | undefined,
  refuse: (total: number) => void,
): Promise<Uint8Array> {
  let out = new Uint8Array(expected ?? 0);
  let total = 0;
  for await (const chunk of chunks) {
    const next = total + chunk.byteLength;
    refuse(next);
    if (next > out.byteLength) {
      const grown = new Uint8Array(Math.max(next, 2 * out.byteLength, 64 * 1024));
      grown.set(out.subarray(0, total));
      out = grown;
    }
    out.set(chunk, total);
    total = next;
  }
  return total === out.byteLength ? out : out.slice(0, total);
}

/** The SDK's credential chain found nothing: where credentials can come from, for a reader and a writer. */
const NO_CREDENTIALS_FIX =
  'no AWS credentials were found: give them in the spicepod (s3_key and s3_secret) or on the command line (--s3-key, --s3-secret), or to the process (AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, AWS_PROFILE, or an instance or pod role)';

/** An `ObjectStore` on `s3://bucket/prefix/`. */
export function createS3Store(options: S3StoreOptions): S3ObjectStore {
  const { bucket, prefix, location, partSize, config } = checkS3Options(options);
  const client = new S3Client(config);
  const uriOf = (key: string): string => `${location}${key}`;

  function fail(error: unknown, operation: StoreOperation, key: string, signal?: AbortSignal): Error {
    if (signal?.aborted === true)
      return signal.reason instanceof Error ? signal.reason : new Error(String(signal.reason));
    if (error instanceof FerryError) return error;
    const status = statusOf(error);
    const sdk = (error ?? {}) as SdkError;
    const reason =
      [sdk.name, sdk.message].filter((s) => s !== undefined && s !== '').join(': ') || String(error);
    return new StoreError(
      {
        operation,
        uri: uriOf(key),
        retryable: isRetryable(error, status),
        reason,
        ...(status === undefined ? {} : { status }),
        ...(sdk.name === 'CredentialsProviderError' ? { fix: NO_CREDENTIALS_FIX } : {}),
      },
      { cause: error },
    );
  }

  function conditionFailure(error: unknown, key: string, options: PutOptions): Error | undefined {
    const status = statusOf(error);
    const name = (error as SdkError).name;
    const conditional = options.ifMatch !== undefined || options.ifNoneMatch !== undefined;
    if (!conditional) return undefined;
    // 409 ConditionalRequestConflict: a concurrent conditional write won. 404 on If-Match: the object is gone.
    if (
      status === 412 ||
      status === 409 ||
      name === 'PreconditionFailed' ||
      (options.ifMatch !== undefined && isNotFound(error))
    ) {
      const condition =
        options.ifMatch !== undefined
          ? `If-Match ${options.ifMatch}`
          : 'If-None-Match * (the object must not exist)';
      return new PreconditionFailedError(uriOf(key), condition, status, { cause: error });
    }
    return undefined;
  }

  const conditions = (o: PutOptions) => ({
    ...(o.ifMatch === undefined ? {} : { IfMatch: o.ifMatch }),
    ...(o.ifNoneMatch === undefined ? {} : { IfNoneMatch: o.ifNoneMatch }),
  });

  /**
   * One PutObject when the body fits one part, else a multipart upload whose CompleteMultipartUpload
   * carries the condition (lib-storage aborts the upload on any failure). Parts stay under S3's
   * 10,000 for a body of known size (a Uint8Array, or `options.size` for a stream).
   */
  async function upload(key: string, body: Uint8Array | AsyncIterable<Uint8Array>, o: PutOptions) {
    const size = body instanceof Uint8Array ? body.byteLength : o.size;
    // Loaded on the first upload: readers (a thread per dataset) never write.
    const { Upload } = await import('@aws-sdk/lib-storage');
    const out = await new Upload({
      client,
      queueSize: UPLOAD_CONCURRENCY,
      partSize: size === undefined ? partSize : Math.max(partSize, Math.ceil(size / MAX_PARTS)),
      params: {
        Bucket: bucket,
        Key: prefix + key,
        Body: body instanceof Uint8Array ? body : Readable.from(body),
        ...(o.contentType === undefined ? {} : { ContentType: o.contentType }),
        ...conditions(o),
      },
    }).done();
    return { etag: out.ETag ?? '' };
  }

  async function* read(key: string, o: ReadOptions = {}): AsyncGenerator<Uint8Array> {
    assertKey(key, location);
    const start = o.start ?? 0;
    if (o.end !== undefined && o.end <= start) {
      if ((await head(key)) === undefined) throw new ObjectNotFoundError(uriOf(key));
      return;
    }
    const range =
      start === 0 && o.end === undefined
        ? undefined
        : `bytes=${start}-${o.end === undefined ? '' : o.end - 1}`;
    let body: unknown;
    try {
      const out = await client.send(
        new GetObjectCommand({
          Bucket: bucket,
          Key: prefix + key,
          ...(range === undefined ? {} : { Range: range }),
        }),
        signalOption(o.signal),
      );
      body = out.Body;
    } catch (error) {
      if (isNotFound(error)) throw new ObjectNotFoundError(uriOf(key), { cause: error });
      // 416: the range starts at or past the end; there are no bytes to read.
      if (statusOf(error) === 416) return;
      throw fail(error, 'read', key, o.signal);
    }
    if (body === undefined) return;
    try {
      for await (const chunk of chunksOf(body)) yield chunk;
    } catch (error) {
      throw fail(error, 'read', key, o.signal);
    } finally {
      destroyBody(body);
    }
  }

  async function head(key: string): Promise<ObjectInfo | undefined> {
    assertKey(key, location);
    try {
      const out = await client.send(new HeadObjectCommand({ Bucket: bucket, Key: prefix + key }));
      return { key, size: out.ContentLength ?? 0, etag: out.ETag ?? '' };
    } catch (error) {
      if (isNotFound(error)) return undefined;
      throw fail(error, 'head', key);
    }
  }

  return {
    location,
    bucket,
    prefix,
    client,

    async get(key: string, o: GetOptions = {}): Promise<GetResult> {
      assertKey(key, location);
      let body: unknown;
      try {
        const out = await client.send(
          new GetObjectCommand({
            Bucket: bucket,
            Key: prefix + key,
            ...(o.ifNoneMatch === undefined ? {} : { IfNoneMatch: o.ifNoneMatch }),
          }),
          signalOption(o.signal),
        );
        body = out.Body;
        const etag = out.ETag;
        if (etag === undefined || etag === '') {
          throw new StoreError({
            operation: 'get',
            uri: uriOf(key),
            retryable: false,
            reason: 'the response has no ETag, so changes cannot be detected',
          });
        }
        const max = o.maxBytes;
        if (max !== undefined && out.ContentLength !== undefined && out.ContentLength > max) {
          throw new ObjectTooLargeError(uriOf(key), out.ContentLength, max);
        }
        const whole =
          body === undefined
            ? new Uint8Array(0)
            : await readWhole(chunksOf(body), out.ContentLength, (total) => {
                if (max !== undefined && total > max) throw new ObjectTooLargeError(uriOf(key), total, max);
              });
        return { status: 'ok', body: whole, etag };
      } catch (error) {
        if (statusOf(error) === 304 && o.ifNoneMatch !== undefined)
          return { status: 'unchanged', etag: o.ifNoneMatch };
        if (isNotFound(error)) return { status: 'not-found' };
        throw fail(error, 'get', key, o.signal);
      } finally {
        destroyBody(body);
      }
    },

    read,
    head,

    async put(key, body, o = {}) {
      assertKey(key, location);
      try {
        return await upload(key, body, o);
      } catch (error) {
        throw conditionFailure(error, key, o) ?? fail(error, 'put', key);
      }
    },

    async *list(listPrefix = '') {
      assertPrefix(listPrefix, location);
      let token: string | undefined;
      do {
        let page: ListObjectsV2CommandOutput;
        try {
          page = await client.send(
            new ListObjectsV2Command({
              Bucket: bucket,
              Prefix: prefix + listPrefix,
              ...(token === undefined ? {} : { ContinuationToken: token }),
            }),
          );
        } catch (error) {
          throw fail(error, 'list', listPrefix);
        }
        for (const object of page.Contents ?? []) {
          if (object.Key === undefined || !object.Key.startsWith(prefix)) continue;
          const key = object.Key.slice(prefix.length);
          if (keyProblem(key) !== undefined) continue;
          yield { key, size: object.Size ?? 0, etag: object.ETag ?? '' };
        }
        token = page.IsTruncated === true ? page.NextContinuationToken : undefined;
      } while (token !== undefined);
    },

    async delete(key) {
      assertKey(key, location);
      try {
        await client.send(new DeleteObjectCommand({ Bucket: bucket, Key: prefix + key }));
      } catch (error) {
        if (isNotFound(error)) return;
        throw fail(error, 'delete', key);
      }
    },

    async close() {
      client.destroy();
    },
  };
}
