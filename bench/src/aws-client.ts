/**
 * Starts the benchmark's AWS process (`aws-process.js`) and talks to it: the orchestrator owns the
 * process; scenario processes reach it through its control URL with {@link AwsControl}.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { request as httpRequest } from 'node:http';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import type { FileFormat } from '@ferry/core';
import type { AwsInfo, AwsRequest, BatchItem, BatchReply, PublishReply } from './aws-protocol.js';

export class AwsControl {
  readonly info: AwsInfo;

  constructor(info: AwsInfo) {
    this.info = info;
  }

  /**
   * One request on a fresh connection (no keep-alive: a pooled socket the server is closing, or one
   * idle through minutes of a starved scenario, must never eat a request).
   */
  async request<T>(request: AwsRequest): Promise<T> {
    const text = await new Promise<string>((resolve, reject) => {
      const req = httpRequest(this.info.control, { method: 'POST', agent: false }, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('end', () => {
          const body = Buffer.concat(chunks).toString('utf8');
          if (res.statusCode === 200) resolve(body);
          else reject(new Error(`AWS process: ${request.op} got HTTP ${res.statusCode}: ${body}`));
        });
        res.on('error', reject);
      });
      req.on('error', reject);
      req.end(JSON.stringify(request));
    });
    const body = JSON.parse(text) as { ok: true; value: T } | { ok: false; error: string };
    if (!body.ok) throw new Error(`AWS process: ${request.op} failed: ${body.error}`);
    return body.value;
  }

  createBucket(bucket: string): Promise<void> {
    return this.request({ op: 'create-bucket', bucket });
  }

  createQueue(name: string): Promise<string> {
    return this.request({ op: 'create-queue', name });
  }

  /** S3 → SQS notifications for uploads of `<prefix>metadata.json` only, as an S3 filter rule would. */
  bridgeMetadata(bucket: string, prefix: string, queueUrl: string): Promise<number> {
    return this.request({ op: 'bridge', bucket, queueUrl, prefix, suffix: 'metadata.json' });
  }

  /** The same notifications published to an SNS topic, which delivers them to its subscribed queues. */
  bridgeMetadataToTopic(bucket: string, prefix: string, topicArn: string): Promise<number> {
    return this.request({ op: 'bridge', bucket, topicArn, prefix, suffix: 'metadata.json' });
  }

  createTopic(name: string): Promise<string> {
    return this.request({ op: 'create-topic', name });
  }

  /** Subscribes the queue to the topic (`raw`: `RawMessageDelivery`). */
  subscribe(topicArn: string, queueUrl: string, raw: boolean): Promise<string> {
    return this.request({ op: 'subscribe', topicArn, queueUrl, raw });
  }

  /** `[fauxqs's timestamp of the write, the bridge's send acknowledged]` (epoch ms) per notification sent, oldest first. */
  bridgeSent(handle: number): Promise<[number, number][]> {
    return this.request({ op: 'bridge-sent', handle });
  }

  stopBridge(handle: number): Promise<void> {
    return this.request({ op: 'stop-bridge', handle });
  }

  /** Requests through the counting endpoint with this method and `bucket/key` target. */
  count(method: string, target: string): Promise<number> {
    return this.request({ op: 'count', method, target });
  }

  publish(options: {
    dataset: string;
    location: string;
    file: string;
    engine?: FileFormat;
    keepLast?: number;
  }): Promise<PublishReply> {
    return this.request({ op: 'publish', ...options });
  }

  publishBatch(location: string, items: readonly BatchItem[]): Promise<BatchReply> {
    return this.request({ op: 'publish-batch', location, items });
  }

  deletePrefix(bucket: string, prefix: string): Promise<void> {
    return this.request({ op: 'delete-prefix', bucket, prefix });
  }

  /** Store params for `createObjectStore` / spicepods: the counting endpoint unless `direct`. */
  endpoint(direct: boolean): string {
    return direct ? this.info.serverEndpoint : this.info.endpoint;
  }
}

export interface AwsProcess {
  readonly control: AwsControl;
  readonly child: ChildProcess;
  stop(): Promise<void>;
}

/** Spawns the AWS process and resolves once it printed its endpoints. */
export async function startAwsProcess(): Promise<AwsProcess> {
  const script = fileURLToPath(new URL('./aws-process.js', import.meta.url));
  const child = spawn(process.execPath, [script], {
    stdio: ['pipe', 'pipe', 'inherit'],
    env: { ...process.env, AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true' },
  });
  const lines = createInterface({ input: child.stdout });
  const info = await new Promise<AwsInfo>((resolve, reject) => {
    child.once('exit', (code) =>
      reject(new Error(`The AWS process exited with code ${code} before starting.`)),
    );
    lines.once('line', (line) => resolve(JSON.parse(line) as AwsInfo));
  });
  const exited = new Promise<void>((resolve) => {
    if (child.exitCode !== null) resolve();
    else child.once('exit', () => resolve());
  });
  return {
    control: new AwsControl(info),
    child,
    async stop() {
      child.stdin?.end();
      const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
      await exited;
      clearTimeout(timer);
    },
  };
}
