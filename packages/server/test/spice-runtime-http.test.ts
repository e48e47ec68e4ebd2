/**
 * The spicepod's runtime settings the HTTP server honours: `runtime.cors` (an allowed origin gets
 * CORS headers and its preflight needs no key; another origin gets none) and `runtime.ready_state`
 * (`on_registration`: ready once every dataset has started, even one still waiting for its first
 * snapshot, where `on_load` waits for it).
 */
import { rm } from 'node:fs/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fixtureDir, type Served, serve } from './helpers.js';

/** The fixture's `orders`, and `late`, which the store has no snapshot of (it waits). */
function pod(location: string, runtime: string): string {
  const dataset = (name: string, engine: string) =>
    `  - from: postgres:public.${name}\n    name: ${name}\n    acceleration: { engine: ${engine}, mode: file, refresh_mode: snapshot, snapshots: enabled, refresh_check_interval: 1h }\n`;
  return `version: v1\nkind: Spicepod\nname: http-runtime\nsnapshots:\n  location: ${location}\ndatasets:\n${dataset('orders', 'duckdb')}${dataset('late', 'duckdb')}runtime:\n${runtime}`;
}

describe('runtime.cors and runtime.ready_state', () => {
  let storeDir: string;
  let location: string;
  let served: Served;

  beforeAll(async () => {
    ({ dir: storeDir, location } = await fixtureDir());
    served = await serve(
      pod(
        location,
        `  cors:\n    enabled: true\n    allowed_origins: ['https://app.example']\n  ready_state: on_registration\n  auth:\n    api-key:\n      keys: [k3y]\n`,
      ),
    );
    await served.runtime.ready('orders', { timeoutMs: 30_000 });
  });

  afterAll(async () => {
    await served?.close();
    await rm(storeDir, { recursive: true, force: true });
  });

  it('answers an allowed origin with CORS headers, its preflight without a key', async () => {
    const preflight = await fetch(`${served.server.url}/v1/sql`, {
      method: 'OPTIONS',
      headers: {
        origin: 'https://app.example',
        'access-control-request-method': 'POST',
        'access-control-request-headers': 'content-type, x-api-key',
      },
    });
    expect(preflight.status).toBe(204);
    expect(preflight.headers.get('access-control-allow-origin')).toBe('https://app.example');
    expect(preflight.headers.get('access-control-allow-methods')).toContain('POST');
    expect(preflight.headers.get('access-control-allow-headers')).toBe('content-type, x-api-key');
    const answer = await fetch(`${served.server.url}/v1/sql`, {
      method: 'POST',
      headers: { origin: 'https://app.example', 'x-api-key': 'k3y' },
      body: 'SELECT count(*) AS n FROM orders',
    });
    expect(answer.status).toBe(200);
    expect(answer.headers.get('access-control-allow-origin')).toBe('https://app.example');
    expect(answer.headers.get('access-control-expose-headers')).toContain('Results-Cache-Status');
    // The answer depends on both the origin (its CORS header) and Accept (its format): a cache
    // keying it on Accept alone would hand this origin's answer to another one.
    const vary = (answer.headers.get('vary') ?? '').split(',').map((name) => name.trim().toLowerCase());
    expect(vary).toEqual(expect.arrayContaining(['origin', 'accept']));
    // A refused query's Retry-After is readable by the page's script.
    expect(answer.headers.get('access-control-expose-headers')).toContain('Retry-After');
    // The request itself still needs the key.
    const keyless = await fetch(`${served.server.url}/v1/sql`, {
      method: 'POST',
      headers: { origin: 'https://app.example' },
      body: 'SELECT 1',
    });
    expect(keyless.status).toBe(401);
  });

  it('gives another origin no CORS header', async () => {
    const other = await fetch(`${served.server.url}/v1/sql`, {
      method: 'POST',
      headers: { origin: 'https://evil.example', 'x-api-key': 'k3y' },
      body: 'SELECT count(*) AS n FROM orders',
    });
    expect(other.headers.get('access-control-allow-origin')).toBeNull();
    // Still Vary: Origin: a cache must not hand this answer (no CORS header) to an allowed origin.
    for (const answer of [
      other,
      await fetch(`${served.server.url}/v1/datasets`, { headers: { 'x-api-key': 'k3y' } }),
    ]) {
      const vary = (answer.headers.get('vary') ?? '').split(',').map((name) => name.trim().toLowerCase());
      expect(vary).toContain('origin');
    }
    const preflight = await fetch(`${served.server.url}/v1/sql`, {
      method: 'OPTIONS',
      headers: { origin: 'https://evil.example', 'access-control-request-method': 'POST' },
    });
    expect(preflight.headers.get('access-control-allow-origin')).toBeNull();
    expect(preflight.status).not.toBe(204);
  });

  it('is ready on registration although late waits for its first snapshot', async () => {
    await expect
      .poll(async () => (await fetch(`${served.server.url}/v1/ready`)).status, {
        timeout: 30_000,
        interval: 100,
      })
      .toBe(200);
    expect(served.runtime.status('late').state).not.toBe('serving');
  });
});

describe('runtime.ready_state: on_load (the default)', () => {
  it('is not ready while a dataset waits for its first snapshot', async () => {
    const { dir, location } = await fixtureDir();
    const served = await serve(pod(location, '  ready_state: on_load\n'));
    try {
      await served.runtime.ready('orders', { timeoutMs: 30_000 });
      const ready = await fetch(`${served.server.url}/v1/ready`);
      expect(ready.status).toBe(503);
      expect(await ready.text()).toMatch(/^not ready: late \(\w+\)$/);
    } finally {
      await served.close();
      await rm(dir, { recursive: true, force: true });
    }
  });
});

describe('secrets in answers', () => {
  it('an error body never shows a value a secret reference resolved to', async () => {
    const { dir, location } = await fixtureDir();
    const secret = 'k3y-that-must-never-show';
    process.env.FERRY_TEST_REDACTED_KEY = secret;
    const served = await serve(
      pod(location, `  auth:\n    api-key:\n      keys:\n        - \${secrets:ferry_test_redacted_key}\n`),
    );
    try {
      await served.runtime.ready('orders', { timeoutMs: 30_000 });
      // DuckDB's conversion error quotes the text it could not convert: here, the key.
      const answer = await fetch(`${served.server.url}/v1/sql`, {
        method: 'POST',
        headers: { 'x-api-key': secret },
        body: `SELECT CAST('${secret}' AS INTEGER) AS n FROM orders`,
      });
      const body = await answer.text();
      expect(answer.status).toBe(400);
      expect(body).not.toContain(secret);
      expect(body).toContain(`\${secrets:ferry_test_redacted_key}`);
    } finally {
      delete process.env.FERRY_TEST_REDACTED_KEY;
      await served.close();
      await rm(dir, { recursive: true, force: true });
    }
  });
});
