import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { appendSnapshot, type ObjectStore, requireLocation } from '@ferry/core';
import { createObjectStore } from '@ferry/store';
import {
  type LocalAws,
  localStoreParams,
  type NotificationBridge,
  startLocalAws,
  startNotificationBridge,
} from '@ferry/test-support';
import { publishSnapshot } from '@ferry/writer';
import type { AwsInfo, AwsRequest, PublishReply } from './aws-protocol.js';
import { datedKey, describeItem } from './batch.js';

const aws: LocalAws = await startLocalAws();
const bridges = new Map<number, NotificationBridge>();
const stores = new Map<string, ObjectStore>();
/** `bucket/key` of every metadata.json → spy timestamps of its uploads, oldest first. */
const metadataWrites = new Map<string, number[]>();
/** Last key time used per dataset by batch publishes (dated keys have second resolution). */
const lastKeyTime = new Map<string, number>();
let nextBridge = 1;

// The spy has no subscribe API; a waiter whose predicate never matches sees every event in order.
void aws.server.spy
  .waitForMessage((message) => {
    if (message.service === 's3' && message.status === 'uploaded' && message.key.endsWith('metadata.json')) {
      const target = `${message.bucket}/${message.key}`;
      const list = metadataWrites.get(target) ?? [];
      list.push(message.timestamp);
      if (list.length > 1000) list.shift();
      metadataWrites.set(target, list);
    }
    return false;
  })
  .catch(() => undefined);

function splitLocation(location: string): { bucket: string; prefix: string } {
  const parsed = requireLocation(location);
  if (parsed.scheme !== 's3') throw new Error(`Location '${location}' is not s3://bucket/prefix/.`);
  return parsed;
}

function storeFor(location: string): ObjectStore {
  let store = stores.get(location);
  if (store === undefined) {
    store = createObjectStore(location, localStoreParams(aws, aws.serverEndpoint));
    stores.set(location, store);
  }
  return store;
}

function lastMetadataWrite(location: string): number {
  const { bucket, prefix } = splitLocation(location);
  const list = metadataWrites.get(`${bucket}/${prefix}metadata.json`);
  const last = list?.[list.length - 1];
  if (last === undefined) throw new Error(`No upload of ${location}metadata.json was seen by the spy.`);
  return last;
}

async function prune(location: string, dataset: string, keepLast: number): Promise<void> {
  const { bucket, prefix } = splitLocation(location);
  const keys = (await aws.listKeys(bucket, prefix)).filter((key) => key.includes(`/dataset=${dataset}/`));
  for (const key of keys.slice(0, Math.max(0, keys.length - keepLast))) await aws.deleteObject(bucket, key);
}

/**
 * The publish in flight per location. fauxqs answers no 412, so two writers rewriting one
 * metadata.json at once would lose one's entry (and move the other dataset's pointer back): the
 * bench's writers take turns, as conditional writes make real ones do.
 */
const publishing = new Map<string, Promise<unknown>>();

function publish(request: Extract<AwsRequest, { op: 'publish' }>): Promise<PublishReply> {
  const previous = publishing.get(request.location) ?? Promise.resolve();
  const next = previous.catch(() => undefined).then(() => publishNow(request));
  publishing.set(request.location, next);
  return next;
}

async function publishNow(request: Extract<AwsRequest, { op: 'publish' }>): Promise<PublishReply> {
  const result = await publishSnapshot({
    dataset: request.dataset,
    location: storeFor(request.location),
    source: { file: request.file },
    ...(request.engine === undefined ? {} : { engine: request.engine }),
    ...(request.workDir === undefined ? {} : { workDir: request.workDir }),
  });
  const metadataWrittenAtMs = lastMetadataWrite(request.location);
  if (request.keepLast !== undefined) await prune(request.location, request.dataset, request.keepLast);
  return { ...result, metadataWrittenAtMs };
}

/** Uploads every item to its dated key, then makes all of them current with ONE metadata.json write. */
async function publishBatch(request: Extract<AwsRequest, { op: 'publish-batch' }>) {
  const { bucket, prefix } = splitLocation(request.location);
  const entries = [];
  for (const item of request.items) {
    const { bytes, schema, checksum } = await describeItem(item);
    const { key, timeMs } = datedKey(lastKeyTime, item);
    await aws.putObject(bucket, `${prefix}${key}`, bytes);
    entries.push({
      location: request.location,
      dataset: item.dataset,
      engine: item.engine,
      schema,
      uri: `${request.location}${key}`,
      checksum,
      size: bytes.byteLength,
      timestampMs: timeMs,
    });
  }
  const existing = await aws.getObject(bucket, `${prefix}metadata.json`);
  let document: unknown = existing === undefined ? undefined : new TextDecoder().decode(existing);
  for (const entry of entries) document = appendSnapshot(document, entry);
  await aws.putObject(bucket, `${prefix}metadata.json`, JSON.stringify(document), {
    contentType: 'application/json',
  });
  return { metadataWrittenAtMs: lastMetadataWrite(request.location), count: entries.length };
}

async function handle(request: AwsRequest): Promise<unknown> {
  switch (request.op) {
    case 'create-bucket':
      await aws.createBucket(request.bucket);
      return null;
    case 'create-queue':
      return aws.createQueue(request.name);
    case 'create-topic':
      return aws.createTopic(request.name);
    case 'subscribe':
      return aws.subscribeQueue(request.topicArn, request.queueUrl, { raw: request.raw });
    case 'bridge': {
      const handleId = nextBridge++;
      bridges.set(
        handleId,
        startNotificationBridge(aws, {
          bucket: request.bucket,
          ...(request.queueUrl === undefined ? {} : { queueUrl: request.queueUrl }),
          ...(request.topicArn === undefined ? {} : { publishToTopicArn: request.topicArn }),
          ...(request.prefix === undefined ? {} : { prefix: request.prefix }),
          ...(request.suffix === undefined ? {} : { suffix: request.suffix }),
        }),
      );
      return handleId;
    }
    case 'bridge-sent':
      return (bridges.get(request.handle)?.all() ?? []).map((sent) => [sent.eventAtMs, sent.sentAtMs]);
    case 'stop-bridge':
      await bridges.get(request.handle)?.stop();
      bridges.delete(request.handle);
      return null;
    case 'count':
      return aws.requests.count(request.method, request.target);
    case 'publish':
      return publish(request);
    case 'publish-batch':
      return publishBatch(request);
    case 'delete-prefix': {
      for (const key of await aws.listKeys(request.bucket, request.prefix)) {
        await aws.deleteObject(request.bucket, key);
      }
      return null;
    }
  }
}

const control = createServer((req, res) => {
  const chunks: Buffer[] = [];
  req.on('data', (chunk: Buffer) => chunks.push(chunk));
  req.on('end', () => {
    const reply = (body: unknown) => {
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(body));
    };
    let request: AwsRequest;
    try {
      request = JSON.parse(Buffer.concat(chunks).toString('utf8')) as AwsRequest;
    } catch (error) {
      reply({ ok: false, error: `unreadable request: ${(error as Error).message}` });
      return;
    }
    handle(request).then(
      (value) => reply({ ok: true, value }),
      (error: unknown) => reply({ ok: false, error: (error as Error).message ?? String(error) }),
    );
  });
});
// Publishes of large files take long and scenarios may starve this process: no server-side timeouts.
control.requestTimeout = 0;
control.headersTimeout = 0;
control.keepAliveTimeout = 0;
await new Promise<void>((resolve) => control.listen(0, '127.0.0.1', resolve));

let closing = false;
async function shutdown(): Promise<void> {
  if (closing) return;
  closing = true;
  control.closeAllConnections();
  control.close();
  for (const bridge of bridges.values()) await bridge.stop();
  for (const store of stores.values()) await store.close();
  await aws.close();
  process.exit(0);
}
process.stdin.on('end', () => void shutdown());
process.stdin.on('close', () => void shutdown());
process.stdin.resume();
process.on('SIGTERM', () => void shutdown());

const info: AwsInfo = {
  endpoint: aws.endpoint,
  serverEndpoint: aws.serverEndpoint,
  region: aws.region,
  accessKeyId: aws.credentials.accessKeyId,
  secretAccessKey: aws.credentials.secretAccessKey,
  control: `http://127.0.0.1:${(control.address() as AddressInfo).port}`,
  pid: process.pid,
};
process.stdout.write(`${JSON.stringify(info)}\n`);
