/**
 * A fleet of readers as users run it: `ferry serve` child processes against the real local S3 + SQS
 * + SNS (fauxqs over HTTP), a writer publishing, and the bucket's notifications published to an SNS
 * topic that fauxqs delivers to each reader's queue (raw and enveloped). Every dataset checks only
 * every 10 minutes, so a reload within seconds is a notification's (the logs name the trigger).
 *
 * - Spice's setup: one topic, a queue per reader, three readers; one is SIGKILLed and restarted and
 *   catches up while the others serve.
 * - Ferry's `ferry_sns_topic_arn`: the reader makes its own queue, reloads through it, and on SIGTERM
 *   finishes the query in flight, stops accepting, deletes the queue and exits 0.
 * - `ferry fleet gc` removes the queue of a SIGKILLed reader and keeps the live one's.
 */

import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { request } from 'node:http';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  type LocalAws,
  localS3Params,
  localStoreParams,
  spicepodYaml,
  startLocalAws,
  startNotificationBridge,
} from '@ferry/test-support';
import { publishSnapshot } from '@ferry/writer';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ferry, type Running, startFerry } from './helpers.js';

const BUCKET = 'ferry-fleet';
const DATASET = 'orders';

let aws: LocalAws;
let dir: string;
const running: Running[] = [];

beforeAll(async () => {
  aws = await startLocalAws();
  await aws.createBucket(BUCKET);
  dir = await mkdtemp(join(tmpdir(), 'ferry-fleet-cli-'));
});

afterAll(async () => {
  for (const serve of running) if (serve.child.exitCode === null) serve.child.kill('SIGKILL');
  await Promise.all(running.map((serve) => serve.exited));
  await aws?.close();
  await rm(dir, { recursive: true, force: true });
});

const location = (prefix: string) => `s3://${BUCKET}/${prefix}`;

function publish(prefix: string, version: number) {
  return publishSnapshot({
    dataset: DATASET,
    engine: 'duckdb',
    location: location(prefix),
    storeParams: localStoreParams(aws),
    source: { sql: `SELECT i::BIGINT AS id, ${version}::BIGINT AS version FROM range(100) t(i)` },
    notNull: ['id'],
  });
}

async function writePod(name: string, prefix: string, queue: Record<string, string>): Promise<string> {
  const path = join(dir, `${name}.yaml`);
  await writeFile(
    path,
    spicepodYaml({
      name,
      location: location(prefix),
      params: { ...localS3Params(aws), s3_queue_endpoint: aws.endpoint, ...queue },
      // A day: no scheduled check may fall between a publish and its notification (the grid's phase is random).
      datasets: [{ name: DATASET, engine: 'duckdb', interval: '24h' }],
    }),
  );
  return path;
}

interface Reader {
  readonly name: string;
  serve: Running;
  base: string;
}

async function serveReader(name: string, pod: string): Promise<Reader> {
  const serve = startFerry(
    [
      'serve',
      pod,
      '--http',
      '127.0.0.1:0',
      '--no-flight',
      '--data-dir',
      join(dir, `${name}-data`),
      '--log-level',
      'debug',
    ],
    { env: { AWS_ENDPOINT_URL_SNS: aws.endpoint, AWS_ACCESS_KEY_ID: 'test', AWS_SECRET_ACCESS_KEY: 'test' } },
  );
  running.push(serve);
  const match = await serve.waitForStdout(/^Listening on (http:\/\/127\.0\.0\.1:\d+)$/m);
  return { name, serve, base: match[1] as string };
}

async function restart(reader: Reader, pod: string): Promise<void> {
  const again = await serveReader(reader.name, pod);
  reader.serve = again.serve;
  reader.base = again.base;
}

async function servedVersion(reader: Reader): Promise<number | undefined> {
  const response = await fetch(`${reader.base}/v1/sql`, {
    method: 'POST',
    headers: { 'content-type': 'text/plain' },
    body: `SELECT max(version) AS v FROM ${DATASET}`,
  });
  if (response.status !== 200) return undefined;
  return ((await response.json()) as { v: number }[])[0]?.v;
}

function serves(reader: Reader, version: number): Promise<void> {
  return expect
    .poll(() => servedVersion(reader), { timeout: 30_000, interval: 100 })
    .toBe(version)
    .then(() => undefined);
}

interface LogLine {
  readonly msg: string;
  readonly level: string;
  readonly [field: string]: unknown;
}

function logLines(serve: Running): LogLine[] {
  return serve
    .stderr()
    .split('\n')
    .filter((line) => line.startsWith('{'))
    .map((line) => JSON.parse(line) as LogLine);
}

/** What started each snapshot check logged after line `from` (`startup`, `schedule`, `notification`). */
function triggersSince(serve: Running, from: number): unknown[] {
  return logLines(serve)
    .slice(from)
    .filter((line) => line.msg.startsWith('Checking the snapshot metadata of dataset '))
    .map((line) => line.trigger);
}

async function stop(reader: Reader): Promise<void> {
  reader.serve.child.kill('SIGTERM');
  const finished = await reader.serve.exited;
  expect(finished.code).toBe(0);
}

describe("Spice's fan-out: one SNS topic, a queue per reader, three `ferry serve` processes", () => {
  it('every reader reloads each snapshot through its own queue; a SIGKILLed reader restarts and catches up', async () => {
    const prefix = 'fan-out/';
    await publish(prefix, 0);
    const topicArn = await aws.createTopic('fleet-fan-out');
    const pods: string[] = [];
    for (const [index, raw] of [true, false, true].entries()) {
      const queueUrl = await aws.createQueue(`fleet-reader-${index + 1}`);
      await aws.subscribeQueue(topicArn, queueUrl, { raw });
      pods.push(await writePod(`reader-${index + 1}`, prefix, { s3_queue_url: queueUrl }));
    }
    const bridge = startNotificationBridge(aws, { bucket: BUCKET, publishToTopicArn: topicArn, prefix });
    try {
      const readers = await Promise.all(pods.map((pod, index) => serveReader(`reader-${index + 1}`, pod)));
      await Promise.all(readers.map((reader) => serves(reader, 0)));

      for (const version of [1, 2]) {
        const marks = readers.map((reader) => logLines(reader.serve).length);
        await publish(prefix, version);
        await Promise.all(readers.map((reader) => serves(reader, version)));
        expect(readers.map((reader, index) => triggersSince(reader.serve, marks[index] ?? 0))).toStrictEqual([
          ['notification'],
          ['notification'],
          ['notification'],
        ]);
      }

      // One reader dies hard; the others keep serving and reloading; it comes back and catches up.
      const [first, second, third] = readers as [Reader, Reader, Reader];
      third.serve.child.kill('SIGKILL');
      expect((await third.serve.exited).signal).toBe('SIGKILL');
      await publish(prefix, 3);
      await Promise.all([serves(first, 3), serves(second, 3)]);
      await restart(third, pods[2] ?? '');
      await serves(third, 3);
      expect(await servedVersion(first)).toBe(3);

      const marks = readers.map((reader) => logLines(reader.serve).length);
      await publish(prefix, 4);
      await Promise.all(readers.map((reader) => serves(reader, 4)));
      expect(readers.map((reader, index) => triggersSince(reader.serve, marks[index] ?? 0))).toStrictEqual([
        ['notification'],
        ['notification'],
        ['notification'],
      ]);
      // No reader shares a queue, so none suspects it does.
      for (const reader of readers) {
        expect(
          logLines(reader.serve).filter((line) => line.msg.includes('Another process probably reads')),
        ).toStrictEqual([]);
      }
      await Promise.all(readers.map(stop));
    } finally {
      await bridge.stop();
    }
  });
});

/** POST /v1/sql with `Expect: 100-continue`: resolves `started` once the server has taken the request. */
function inflightQuery(base: string, sql: string) {
  const url = new URL(`${base}/v1/sql`);
  let started!: () => void;
  const accepted = new Promise<void>((resolve) => {
    started = resolve;
  });
  const req = request({
    host: url.hostname,
    port: url.port,
    path: url.pathname,
    method: 'POST',
    headers: {
      'content-type': 'text/plain',
      'content-length': Buffer.byteLength(sql),
      expect: '100-continue',
    },
  });
  const response = new Promise<{ status: number; body: string }>((resolve, reject) => {
    req.on('response', (res) => {
      let body = '';
      res.setEncoding('utf8').on('data', (chunk: string) => {
        body += chunk;
      });
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
      res.on('error', reject);
    });
    req.on('error', reject);
  });
  req.on('continue', () => started());
  req.flushHeaders();
  return { accepted, finish: () => req.end(sql), response };
}

describe('ferry_sns_topic_arn: each reader makes its own queue', () => {
  it('makes, tags and subscribes it, reloads through it, and on SIGTERM finishes the query in flight, deletes it and exits 0', async () => {
    const prefix = 'own-queue/';
    await publish(prefix, 0);
    const topicArn = await aws.createTopic('fleet-own');
    const pod = await writePod('own', prefix, {
      ferry_sns_topic_arn: topicArn,
      ferry_sns_raw_message_delivery: 'false',
    });
    const bridge = startNotificationBridge(aws, { bucket: BUCKET, publishToTopicArn: topicArn, prefix });
    try {
      const before = Date.now();
      const reader = await serveReader('own', pod);
      const [, name] = await reader.serve.waitForStderr(
        /made its own SQS queue '(ferry-reader-[0-9a-f]{24})'/,
      );
      await serves(reader, 0);
      const [url] = await aws.listQueues(name);
      const tags = await aws.queueTags(url ?? '');
      expect(tags).toMatchObject({
        'ferry:role': 'reader',
        'ferry:topic-arn': topicArn,
        'ferry:host': hostname().replace(/[^\p{L}\p{N} _.:/=+\-@]/gu, '_'),
        'ferry:pid': String(reader.serve.child.pid),
        'ferry:heartbeat-interval-seconds': '60',
      });
      expect(Date.parse(tags['ferry:started-at'] ?? '')).toBeGreaterThanOrEqual(before - 1000);
      const queueArn = `arn:aws:sqs:us-east-1:000000000000:${name}`;
      expect(await aws.subscriptionsOf(topicArn)).toMatchObject([{ endpoint: queueArn, raw: false }]);

      const mark = logLines(reader.serve).length;
      await publish(prefix, 1);
      await serves(reader, 1);
      expect(triggersSince(reader.serve, mark)).toStrictEqual(['notification']);

      // SIGTERM while a query is in flight: it finishes; new connections are refused meanwhile.
      const query = inflightQuery(reader.base, `SELECT count(*) AS n, max(version) AS v FROM ${DATASET}`);
      await query.accepted;
      reader.serve.child.kill('SIGTERM');
      await reader.serve.waitForStderr(/Received SIGTERM; closing the HTTP server, then the runtime/);
      await expect(fetch(`${reader.base}/health`)).rejects.toThrow();
      query.finish();
      expect(await query.response).toStrictEqual({ status: 200, body: JSON.stringify([{ n: 100, v: 1 }]) });
      const finished = await reader.serve.exited;
      expect(finished.code).toBe(0);
      const messages = logLines(reader.serve).map((line) => line.msg);
      expect(messages).toContain(
        `Snapshot location 's3://${BUCKET}/own-queue' removed its SQS queue '${name}' and the queue's subscription to the topic.`,
      );
      expect(messages.at(-1)).toBe('Stopped');
      expect(await aws.listQueues(name)).toStrictEqual([]);
      expect(await aws.subscriptionsOf(topicArn)).toStrictEqual([]);
    } finally {
      await bridge.stop();
    }
  });
});

describe('ferry fleet gc', () => {
  it("removes a SIGKILLed reader's queue and subscription and keeps the live reader's", async () => {
    const prefix = 'gc/';
    await publish(prefix, 0);
    const topicArn = await aws.createTopic('fleet-gc');
    const pod = await writePod('gc', prefix, {
      ferry_sns_topic_arn: topicArn,
      ferry_sns_heartbeat_interval: '1s',
    });
    const bridge = startNotificationBridge(aws, { bucket: BUCKET, publishToTopicArn: topicArn, prefix });
    try {
      const live = await serveReader('gc-live', pod);
      const dead = await serveReader('gc-dead', pod);
      const queueOf = async (reader: Reader) =>
        (
          await reader.serve.waitForStderr(/made its own SQS queue '(ferry-reader-[0-9a-f]{24})'/)
        )[1] as string;
      const liveName = await queueOf(live);
      const deadName = await queueOf(dead);
      const [liveUrl] = await aws.listQueues(liveName);
      const [deadUrl] = await aws.listQueues(deadName);
      dead.serve.child.kill('SIGKILL');
      await dead.serve.exited;
      const heartbeat = async (url: string | undefined) =>
        Date.parse((await aws.queueTags(url ?? ''))['ferry:heartbeat-at'] ?? '');
      const lastDeadBeat = await heartbeat(deadUrl);
      // The live reader keeps beating; once its heartbeat is 3 intervals past the dead one's, gc can tell.
      await expect
        .poll(() => heartbeat(liveUrl), { timeout: 20_000, interval: 250 })
        .toBeGreaterThan(lastDeadBeat + 3_500);

      const env = { AWS_ACCESS_KEY_ID: 'test', AWS_SECRET_ACCESS_KEY: 'test' };
      const args = ['fleet', 'gc', '--topic', topicArn, '--endpoint', aws.endpoint];
      const dry = await ferry([...args, '--dry-run'], { env });
      expect(dry.stderr).toBe('');
      expect(dry.code).toBe(0);
      const row = (output: string, queue: string) =>
        output.split('\n').find((line) => line.startsWith(queue)) ?? '';
      expect(row(dry.stdout, deadName)).toMatch(
        new RegExp(
          `^${deadName} +abandoned +would remove +\\S+ +${dead.serve.child.pid} +\\d{4}-\\d{2}-\\d{2}T\\S+ +last heartbeat \\d+s ago, over 3s$`,
        ),
      );
      expect(row(dry.stdout, liveName)).toMatch(new RegExp(`^${liveName} +live +kept `));
      expect((await aws.listQueues(deadName)).length).toBe(1);

      const gc = await ferry([...args, '--json'], { env });
      expect(gc.code).toBe(0);
      const report = JSON.parse(gc.stdout) as {
        queues: { name: string; action: string }[];
        subscriptions: { endpoint: string; action: string; reason: string }[];
      };
      expect(report.queues.map((queue) => [queue.name, queue.action]).sort()).toStrictEqual(
        [
          [deadName, 'removed'],
          [liveName, 'kept'],
        ].sort(),
      );
      expect(report.subscriptions).toMatchObject([
        {
          endpoint: `arn:aws:sqs:us-east-1:000000000000:${deadName}`,
          action: 'removed',
          reason: 'queue removed',
        },
      ]);
      expect(await aws.listQueues(deadName)).toStrictEqual([]);
      expect((await aws.subscriptionsOf(topicArn)).map((s) => s.endpoint)).toStrictEqual([
        `arn:aws:sqs:us-east-1:000000000000:${liveName}`,
      ]);

      // The live reader still reloads through its queue.
      const mark = logLines(live.serve).length;
      await publish(prefix, 1);
      await serves(live, 1);
      expect(triggersSince(live.serve, mark)).toStrictEqual(['notification']);
      await stop(live);
      expect(await aws.listQueues('ferry-reader-')).toStrictEqual([]);
    } finally {
      await bridge.stop();
    }
  });

  it('usage errors name the flag', async () => {
    const missing = await ferry(['fleet', 'gc']);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toContain('gc needs --topic ARN');
    const bad = await ferry(['fleet', 'gc', '--topic', 'arn:aws:sqs:us-east-1:123456789012:q']);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain("--topic 'arn:aws:sqs:us-east-1:123456789012:q' is not an SNS topic ARN");
    const action = await ferry(['fleet', 'prune']);
    expect(action.code).toBe(2);
    expect(action.stderr).toContain("unknown action 'prune'");
  });
});
