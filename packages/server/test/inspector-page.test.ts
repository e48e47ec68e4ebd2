/**
 * The inspector page in a real browser (Debian's Chromium driven by playwright-core) against a
 * real runtime serving two datasets published with the writer to a local S3: both panels show
 * `serving`; "Poll now" on one shows it pass through `polling` back to `serving` with the poll's
 * result and the outcome state it took; a newly published snapshot shows the swap and the new snapshot id; a server restart is
 * survived (the page reconnects and resyncs). Saves a screenshot under test-results/.
 */
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createRuntime, memoryLogger, type Runtime } from '@ferry/runtime';
import { type LocalAws, localStoreParams, startLocalAws } from '@ferry/test-support';
import { type PublishResult, publishSnapshot } from '@ferry/writer';
import { type BrowserContext, chromium, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { inspectorRoutes, type Route, type RunningServer, startServer } from '../src/index.js';

const CHROMIUM = '/usr/bin/chromium';
const HAS_CHROMIUM = existsSync(CHROMIUM);
const BUCKET = 'ferry-inspector';
const LOCATION = `s3://${BUCKET}/snapshots/`;
const RESULTS_DIR = fileURLToPath(new URL('../../../test-results/', import.meta.url));

function publish(
  aws: LocalAws,
  dataset: string,
  engine: 'duckdb' | 'sqlite',
  version: number,
): Promise<PublishResult> {
  return publishSnapshot({
    dataset,
    engine,
    location: LOCATION,
    storeParams: localStoreParams(aws),
    source: { sql: `SELECT i::BIGINT AS id, ${version}::BIGINT AS version FROM range(50) t(i)` },
    notNull: ['id'],
  });
}

/** Two datasets polling only on demand (a one-hour interval), so every poll is the test's. */
function spicepod(aws: LocalAws): string {
  const datasets = [
    ['orders', 'duckdb'],
    ['users', 'sqlite'],
  ] as const;
  return [
    'version: v1',
    'kind: Spicepod',
    'name: inspector-test',
    'snapshots:',
    `  location: ${LOCATION}`,
    '  params:',
    `    s3_endpoint: ${aws.endpoint}`,
    '    allow_http: true',
    `    s3_region: ${aws.region}`,
    '    s3_auth: key',
    `    s3_key: ${aws.credentials.accessKeyId}`,
    `    s3_secret: ${aws.credentials.secretAccessKey}`,
    'datasets:',
    ...datasets.flatMap(([name, engine]) => [
      `  - from: postgres:public.${name}`,
      `    name: ${name}`,
      '    acceleration:',
      `      engine: ${engine}`,
      '      mode: file',
      '      refresh_mode: snapshot',
      '      refresh_check_interval: 1h',
      '      snapshots: enabled',
    ]),
    '',
  ].join('\n');
}

/**
 * The little of the DOM the in-page checks use. The tests compile without the DOM library, and
 * functions run in the page cannot refer to anything outside themselves, so each one reaches the
 * document as `(globalThis as unknown as InPage).document`.
 */
interface InPageElement {
  readonly textContent: string | null;
  readonly dataset: Readonly<Record<string, string | undefined>>;
}

interface InPage {
  readonly document: {
    readonly body: InPageElement;
    querySelector(selector: string): InPageElement | null;
    querySelectorAll(selector: string): Iterable<InPageElement>;
  };
}

const panel = (dataset: string) => `section.dataset[data-dataset="${dataset}"]`;

async function fieldText(page: Page, dataset: string, name: string): Promise<string> {
  return (await page.locator(`${panel(dataset)} [data-field="${name}"]`).textContent()) ?? '';
}

/** Resolves once the dataset's panel field shows exactly `text`. */
async function waitForField(page: Page, dataset: string, name: string, text: string): Promise<void> {
  await page.waitForFunction(
    ([selector, want]) =>
      (globalThis as unknown as InPage).document.querySelector(selector as string)?.textContent === want,
    [`${panel(dataset)} [data-field="${name}"]`, text],
    { timeout: 20_000 },
  );
}

function history(page: Page, dataset: string): Promise<string[]> {
  return page.$$eval(`${panel(dataset)} .history-list li`, (items) =>
    items.map((item) => (item as unknown as InPageElement).dataset.state ?? ''),
  );
}

/** Resolves with the history once the entries recorded after `from` include `sequence` in order. */
async function waitForHistory(
  page: Page,
  dataset: string,
  from: number,
  sequence: string[],
): Promise<string[]> {
  await page.waitForFunction(
    ([selector, start, want]) => {
      const states = [...(globalThis as unknown as InPage).document.querySelectorAll(selector as string)]
        .map((item) => item.dataset.state ?? '')
        .slice(start as number);
      let next = 0;
      for (const state of states) if (state === (want as string[])[next]) next++;
      return next === (want as string[]).length;
    },
    [`${panel(dataset)} .history-list li`, from, sequence] as const,
    { timeout: 20_000 },
  );
  return history(page, dataset);
}

const SUITE = HAS_CHROMIUM
  ? 'inspector page in Chromium'
  : `inspector page in Chromium — SKIPPED: ${CHROMIUM} is absent (install Debian's chromium; CI does)`;

describe.skipIf(!HAS_CHROMIUM)(SUITE, () => {
  let aws: LocalAws;
  let runtime: Runtime;
  let routes: Route[];
  let server: RunningServer;
  let context: BrowserContext;
  let page: Page;
  let dir: string;
  let first: { orders: PublishResult; users: PublishResult };

  beforeAll(async () => {
    aws = await startLocalAws();
    await aws.createBucket(BUCKET);
    first = {
      orders: await publish(aws, 'orders', 'duckdb', 1),
      users: await publish(aws, 'users', 'sqlite', 1),
    };
    dir = await mkdtemp(join(tmpdir(), 'ferry-inspector-'));
    runtime = await createRuntime(
      { yaml: spicepod(aws), baseDir: dir },
      // Every poll reads the store itself (no sharing of a read made a moment earlier).
      { logger: memoryLogger(), dataDir: join(dir, 'data'), metadataWindowMs: 0 },
    );
    routes = inspectorRoutes(runtime);
    server = await startServer(runtime, { port: 0, routes });
    await runtime.ready(undefined, { timeoutMs: 30_000 });
    context = await chromium.launchPersistentContext(join(dir, 'chromium-profile'), {
      executablePath: CHROMIUM,
      headless: true,
      args: [
        '--headless',
        '--no-sandbox',
        '--disable-gpu',
        '--disable-quic',
        '--no-first-run',
        '--disable-background-networking',
        '--disable-component-update',
        '--disable-sync',
      ],
      viewport: { width: 1320, height: 1000 },
    });
    page = context.pages()[0] ?? (await context.newPage());
  });

  afterAll(async () => {
    await context?.close();
    await server?.close();
    await runtime?.close();
    await aws?.close();
    if (dir !== undefined) await rm(dir, { recursive: true, force: true });
  });

  it('shows both datasets serving, with the statechart highlighting the current state', async () => {
    const errors: string[] = [];
    page.on('pageerror', (error) => errors.push(error.message));
    page.on('console', (message) => {
      if (message.type() === 'error') errors.push(message.text());
    });
    await page.goto(`${server.url}/inspector`);
    await page.waitForSelector('#connection[data-connection="live"]');
    await waitForField(page, 'orders', 'state', 'serving');
    await waitForField(page, 'users', 'state', 'serving');

    expect(await page.locator('section.dataset').count()).toBe(2);
    expect(await fieldText(page, 'orders', 'snapshot-id')).toBe(String(first.orders.snapshotId));
    expect(await fieldText(page, 'users', 'snapshot-id')).toBe(String(first.users.snapshotId));
    expect(await fieldText(page, 'orders', 'engine')).toBe('duckdb');
    // The chart has a box per top-level state and highlights exactly the current one.
    const boxes = await page.$$eval(`${panel('orders')} svg g.state`, (groups) =>
      groups.map((group) => (group as unknown as InPageElement).dataset.state),
    );
    expect(boxes).toEqual(['waiting', 'bootstrapping', 'serving', 'polling', 'swapping', 'stopped']);
    const current = await page.$$eval(`${panel('orders')} svg g.state.current`, (groups) =>
      groups.map((group) => (group as unknown as InPageElement).dataset.state),
    );
    expect(current).toEqual(['serving']);
    expect(await page.locator(`${panel('orders')} svg path.edge`).count()).toBeGreaterThan(5);
    expect(errors).toEqual([]);
  });

  it('"Poll now" shows the dataset pass through polling back to serving with the poll result', async () => {
    const ordersBefore = await history(page, 'orders');
    const usersBefore = await history(page, 'users');
    const pollsBefore = runtime.status('orders').status?.counters.polls ?? 0;

    await page.click(`${panel('orders')} button[data-command="poll.now"]`);

    const after = await waitForHistory(page, 'orders', ordersBefore.length, ['polling', 'serving']);
    expect(after.slice(ordersBefore.length)).toEqual(['polling', 'serving']);
    await waitForField(page, 'orders', 'last-poll-result', 'unchanged');
    await waitForField(page, 'orders', 'state', 'serving');
    expect(await fieldText(page, 'orders', 'command-result')).toBe('poll.now accepted');
    expect(await fieldText(page, 'orders', 'counters')).toContain(`polls ${pollsBefore + 1}`);
    const log = (await page.locator(`${panel('orders')} .log-list`).textContent()) ?? '';
    expect(log).toContain('poll.now');
    expect(log).toContain('poll result: unchanged');
    // The path the poll took: its own outcome state, not a generic end.
    expect(log).toContain('→ polling.metadataUnchanged');
    // The other dataset did not poll.
    expect(await history(page, 'users')).toEqual(usersBefore);
  });

  it('shows the swap and the new snapshot id after a new snapshot is published', async () => {
    const published = await publish(aws, 'orders', 'duckdb', 2);
    expect(published.snapshotId).toBeGreaterThan(first.orders.snapshotId);
    const before = await history(page, 'orders');

    await page.click(`${panel('orders')} button[data-command="poll.now"]`);

    await waitForField(page, 'orders', 'snapshot-id', String(published.snapshotId));
    const after = await waitForHistory(page, 'orders', before.length, ['polling', 'swapping', 'serving']);
    expect(after.slice(before.length)).toEqual(['polling', 'swapping', 'serving']);
    await waitForField(page, 'orders', 'last-poll-result', 'newer');
    // The chart highlights the arrow just taken.
    const taken = page.locator(`${panel('orders')} svg path.edge.taken`);
    expect(await taken.count()).toBe(1);
    expect(await taken.locator('title').textContent()).toMatch(/^swapping → serving/);
    expect(await fieldText(page, 'orders', 'schema-id')).toBe(String(published.schemaId));
    const swapLog = (await page.locator(`${panel('orders')} .log-list`).textContent()) ?? '';
    expect(swapLog).toContain(`swapped ${first.orders.snapshotId} → ${published.snapshotId}`);
    for (const step of [
      'polling.downloading',
      'polling.verifying',
      'swapping.installing',
      'swapping.swapped',
    ]) {
      expect(swapLog).toContain(`→ ${step}`);
    }
    expect(await fieldText(page, 'users', 'snapshot-id')).toBe(String(first.users.snapshotId));

    await mkdir(RESULTS_DIR, { recursive: true });
    await page.screenshot({ path: join(RESULTS_DIR, 'inspector.png'), fullPage: true });
  });

  it('pauses and resumes polling from the page', async () => {
    await page.click(`${panel('users')} button[data-command="polling.pause"]`);
    await waitForField(page, 'users', 'next-poll', 'paused');
    expect(await page.locator(`${panel('users')} [data-field="paused"]`).isVisible()).toBe(true);
    expect(runtime.status('users').status?.paused).toBe(true);
    expect(await page.locator(`${panel('users')} button[data-command="polling.pause"]`).isDisabled()).toBe(
      true,
    );

    await page.click(`${panel('users')} button[data-command="polling.resume"]`);
    await page.waitForSelector(`${panel('users')} [data-field="paused"]`, { state: 'hidden' });
    expect(runtime.status('users').status?.paused).toBe(false);
  });

  it('reconnects after a server restart and resyncs from a fresh snapshot', async () => {
    const snapshots = Number(
      await page.evaluate(() => (globalThis as unknown as InPage).document.body.dataset.snapshots),
    );
    const before = await history(page, 'users');
    const port = server.port;
    await server.close();
    await page.waitForSelector('#connection:not([data-connection="live"])');

    server = await startServer(runtime, { port, routes });
    await page.waitForSelector('#connection[data-connection="live"]', { timeout: 20_000 });
    await page.waitForFunction(
      (seen) => Number((globalThis as unknown as InPage).document.body.dataset.snapshots) > seen,
      snapshots,
    );
    await page.click(`${panel('users')} button[data-command="poll.now"]`);
    await waitForField(page, 'users', 'command-result', 'poll.now accepted');
    await waitForHistory(page, 'users', before.length, ['polling', 'serving']);
  });
});
