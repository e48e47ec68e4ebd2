/**
 * Injected S3 responses for paths the local server cannot produce. fauxqs accepts PutObject and
 * CompleteMultipartUpload with If-Match / If-None-Match without checking them, so
 * {@link emulateConditionalWrites} checks the condition against the real server and answers with
 * the 412 (or 404) S3 would send; {@link injectS3Fault} answers chosen requests with any error
 * status. Both are SDK middleware placed right after the deserializer, so the client parses the
 * injected response exactly as it parses a real one. The requests they let through are untouched.
 */
import { HeadObjectCommand, S3Client } from '@aws-sdk/client-s3';
import type { LocalAws } from '@ferry/local-aws';

export interface S3RequestContext {
  /** `PutObjectCommand`, `GetObjectCommand`, … */
  readonly commandName: string;
  /** The command input (`Bucket`, `Key`, `IfMatch`, …). */
  readonly input: Readonly<Record<string, unknown>>;
  readonly method: string;
  readonly path: string;
  readonly headers: Readonly<Record<string, string>>;
}

export interface InjectedS3Error {
  readonly status: number;
  /** S3 error code, e.g. `PreconditionFailed`, `SlowDown`. */
  readonly code: string;
  readonly message?: string;
}

export type S3FaultDecider = (
  context: S3RequestContext,
) => InjectedS3Error | undefined | Promise<InjectedS3Error | undefined>;

export interface S3Fault {
  /** How many responses were injected. */
  injected(): number;
  /** Take the middleware off the client. Idempotent. */
  remove(): void;
}

type AnyMiddleware = Parameters<S3Client['middlewareStack']['addRelativeTo']>[0];
type Next = (args: unknown) => Promise<unknown>;
interface WireRequest {
  readonly method?: string;
  readonly path?: string;
  readonly headers?: Record<string, string>;
}

let faultCounter = 0;

function escapeXml(s: string): string {
  return s.replaceAll('&', '&amp;').replaceAll('<', '&lt;').replaceAll('>', '&gt;');
}

function errorXml(error: InjectedS3Error): Uint8Array {
  const code = escapeXml(error.code);
  const message = escapeXml(error.message ?? `Injected ${error.code}`);
  return new TextEncoder().encode(
    `<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>${code}</Code><Message>${message}</Message><RequestId>INJECTED</RequestId><HostId>ferry-test-support</HostId></Error>`,
  );
}

/** Answer the requests `decide` picks with an S3 error response instead of sending them. */
export function injectS3Fault(client: S3Client, decide: S3FaultDecider): S3Fault {
  const name = `ferryInjectedFault${++faultCounter}`;
  let count = 0;
  let removed = false;
  const middleware = ((next: Next, context: { commandName?: string }) =>
    async (args: { input?: Record<string, unknown>; request?: WireRequest }) => {
      const request = args.request ?? {};
      const decision = await decide({
        commandName: context.commandName ?? '',
        input: args.input ?? {},
        method: request.method ?? '',
        path: request.path ?? '',
        headers: request.headers ?? {},
      });
      if (decision === undefined) return next(args);
      count++;
      return {
        response: {
          statusCode: decision.status,
          headers: { 'content-type': 'application/xml', 'x-amz-request-id': 'INJECTED' },
          body: errorXml(decision),
        },
      };
    }) as unknown as AnyMiddleware;
  client.middlewareStack.addRelativeTo(middleware, {
    relation: 'after',
    toMiddleware: 'deserializerMiddleware',
    name,
  });
  return {
    injected: () => count,
    remove() {
      if (removed) return;
      removed = true;
      client.middlewareStack.remove(name);
    },
  };
}

function normaliseEtag(etag: string): string {
  return etag
    .trim()
    .replace(/^W\//, '')
    .replace(/^"(.*)"$/, '$1');
}

/**
 * Make `client` see S3's conditional-write semantics on the local server: PutObject and
 * CompleteMultipartUpload with `IfNoneMatch: '*'` on an existing key get 412 PreconditionFailed;
 * with `IfMatch` get 412 when the current ETag differs and 404 NoSuchKey when the key is missing.
 * The check and the write are two requests, so it is not atomic: use it for behaviour, not races.
 */
export function emulateConditionalWrites(client: S3Client, aws: LocalAws): S3Fault {
  const checker = new S3Client(aws.s3Config({ direct: true }));
  const fault = injectS3Fault(client, async ({ commandName, input }) => {
    if (commandName !== 'PutObjectCommand' && commandName !== 'CompleteMultipartUploadCommand')
      return undefined;
    const ifMatch = typeof input.IfMatch === 'string' ? input.IfMatch : undefined;
    const ifNoneMatch = typeof input.IfNoneMatch === 'string' ? input.IfNoneMatch : undefined;
    if (ifMatch === undefined && ifNoneMatch === undefined) return undefined;
    let current: string | undefined;
    try {
      const head = await checker.send(
        new HeadObjectCommand({ Bucket: String(input.Bucket), Key: String(input.Key) }),
      );
      current = head.ETag ?? '';
    } catch (error) {
      if ((error as { $metadata?: { httpStatusCode?: number } }).$metadata?.httpStatusCode !== 404)
        throw error;
    }
    if (ifNoneMatch === '*' && current !== undefined) {
      return {
        status: 412,
        code: 'PreconditionFailed',
        message: 'At least one of the pre-conditions you specified did not hold',
      };
    }
    if (ifMatch !== undefined) {
      if (current === undefined)
        return { status: 404, code: 'NoSuchKey', message: 'The specified key does not exist.' };
      if (normaliseEtag(current) !== normaliseEtag(ifMatch)) {
        return {
          status: 412,
          code: 'PreconditionFailed',
          message: 'At least one of the pre-conditions you specified did not hold',
        };
      }
    }
    return undefined;
  });
  return {
    injected: fault.injected,
    remove() {
      fault.remove();
      checker.destroy();
    },
  };
}
