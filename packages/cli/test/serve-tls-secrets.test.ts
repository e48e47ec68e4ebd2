/**
 * `ferry serve` on a spicepod that asks for TLS and reads its secrets the way Spice does: the
 * spicepod's `runtime.tls` (a certificate file beside it, the key as a `${secrets:…}` PEM text) puts
 * both endpoints on TLS without any flag — plaintext is never served — and its secrets come from the
 * environment and the `.env` file beside it (Spice's env store: `${secrets:api_key}` reads
 * `API_KEY`). No resolved secret reaches a log line, an error or `/v1/datasets`. A TLS file that
 * cannot be read, or a key that is not the certificate's, stops the pod naming the key, in `serve`
 * and in `validate`.
 */
import { generateKeyPairSync } from 'node:crypto';
import { copyFile, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { request as httpRequest } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { copyFixtureStore, spicepodYaml, TLS_FIXTURE } from '@ferry/test-support';
import { SpiceClient } from '@spiceai/spice';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ferry, httpsFetch, type Running, startFerry } from './helpers.js';

const API_KEY = 'k3y-read-from-dotenv';
const REFRESH_SECRET = 'secret-interval-10m';

describe('ferry serve with runtime.tls and Spice secrets in the spicepod', () => {
  let dir: string;
  let serve: Running;
  let base: string;
  let flight: string;
  let keyPem: string;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'ferry-serve-tls-'));
    const { location } = await copyFixtureStore({ kind: 'dir', dir: join(dir, 'store') });
    await copyFile(TLS_FIXTURE.cert, join(dir, 'cert.pem'));
    keyPem = await readFile(TLS_FIXTURE.key, 'utf8');
    // Spice's env store reads .env beside the spicepod; the environment wins over it.
    await writeFile(join(dir, '.env'), `API_KEY=${API_KEY}\nSPICE_TLS_KEY=not-this-one\n`);
    const pod = `${spicepodYaml({
      name: 'tls-test',
      location,
      datasets: [
        { name: 'orders', engine: 'duckdb' },
        { name: 'users', engine: 'sqlite' },
      ],
    })}secrets:
  - from: env
    name: env
runtime:
  tls:
    enabled: true
    certificate_file: cert.pem
    key: \${ secrets:tls_key }
  auth:
    api-key:
      keys:
        - \${secrets:api_key}
`;
    await writeFile(join(dir, 'spicepod.yaml'), pod);
    serve = startFerry(
      [
        'serve',
        join(dir, 'spicepod.yaml'),
        '--http',
        '127.0.0.1:0',
        '--flight',
        '127.0.0.1:0',
        '--data-dir',
        join(dir, 'data'),
        '--log-level',
        'debug',
      ],
      { env: { SPICE_TLS_KEY: keyPem, FERRY_UNUSED: REFRESH_SECRET } },
    );
    flight = (await serve.waitForStdout(/^Flight on grpc\+tls:\/\/(127\.0\.0\.1:\d+)$/m))[1] as string;
    base = (await serve.waitForStdout(/^Listening on (https:\/\/\S+)$/m))[1] as string;
  });

  afterAll(async () => {
    if (serve !== undefined && serve.child.exitCode === null) serve.child.kill('SIGKILL');
    await rm(dir, { recursive: true, force: true });
  });

  it('serves HTTPS with the key from the secret and the certificate file, and no plaintext', async () => {
    await expect
      .poll(async () => (await httpsFetch(`${base}/v1/ready`)).status, { timeout: 30_000, interval: 200 })
      .toBe(200);
    const answer = await httpsFetch(`${base}/v1/sql`, {
      method: 'POST',
      headers: { 'x-api-key': API_KEY },
      body: 'SELECT count(*) AS n FROM orders',
    });
    expect(answer.status).toBe(200);
    expect(JSON.parse(await answer.text())).toEqual([{ n: 8 }]);
    const plain = base.replace('https://', 'http://');
    const refused = await new Promise<string>((resolve) => {
      const request = httpRequest(`${plain}/health`, (response) =>
        resolve(`answered ${response.statusCode}`),
      );
      request.on('error', (error) => resolve(`failed: ${error.message}`));
      request.end();
    });
    expect(refused).not.toBe('answered 200');
  });

  it("serves Spice's JS SDK over Flight TLS with the key from .env", async () => {
    const client = new SpiceClient({
      flightUrl: flight,
      flightOnly: true,
      flightTlsEnabled: true,
      tlsRootCertFile: TLS_FIXTURE.cert,
      httpUrl: 'http://127.0.0.1:9',
      apiKey: API_KEY,
      logging: false,
    });
    client.setMaxRetries(0);
    const table = await client.sql('SELECT count(*) AS n FROM users');
    expect(Number(table.toArray()[0]?.n)).toBe(3);
    const plaintext = new SpiceClient({
      flightUrl: flight,
      flightOnly: true,
      flightTlsEnabled: false,
      httpUrl: 'http://127.0.0.1:9',
      apiKey: API_KEY,
      logging: false,
    });
    plaintext.setMaxRetries(0);
    await expect(plaintext.sql('SELECT 1 AS n')).rejects.toThrow();
  });

  it('shows no resolved secret in /v1/datasets or in any log line', async () => {
    const datasets = await httpsFetch(`${base}/v1/datasets?status=true`, {
      headers: { 'x-api-key': API_KEY },
    });
    expect(datasets.status).toBe(200);
    const body = await datasets.text();
    expect(body).toContain('orders');
    expect(body).not.toContain(API_KEY);
    expect(body).not.toContain('PRIVATE KEY');
    serve.child.kill('SIGTERM');
    const finished = await serve.exited;
    expect(finished.code).toBe(0);
    const serving = finished.stderr
      .split('\n')
      .filter((line) => line.startsWith('{'))
      .map((line) => JSON.parse(line) as Record<string, unknown>)
      .find((record) => typeof record.msg === 'string' && record.msg.startsWith('Serving '));
    expect(serving).toMatchObject({ auth: true, apiKeys: 1, tls: true });
    expect(finished.stderr).not.toContain(API_KEY);
    expect(finished.stderr).not.toContain(keyPem.split('\n')[1] as string);
  });
});

describe('runtime.tls that cannot work stops the pod, naming the key', () => {
  let dir: string;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'ferry-tls-broken-'));
    await copyFile(TLS_FIXTURE.cert, join(dir, 'cert.pem'));
    const other = generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey.export({
      type: 'pkcs8',
      format: 'pem',
    });
    await writeFile(join(dir, 'other.key'), other);
    const ec = generateKeyPairSync('ec', { namedCurve: 'prime256v1' }).privateKey.export({
      type: 'pkcs8',
      format: 'pem',
    });
    await writeFile(join(dir, 'ec.key'), ec);
  });

  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  const pod = async (name: string, tls: string): Promise<string> => {
    const path = join(dir, `${name}.yaml`);
    await writeFile(
      path,
      `${spicepodYaml({ name, location: `file://${join(dir, 'store')}/`, datasets: [{ name: 'orders', engine: 'duckdb' }] })}runtime:\n  tls:\n${tls}`,
    );
    return path;
  };

  /** `ferry serve` of a pod that must stop before it listens. */
  const serveOnce = (path: string) =>
    ferry([
      'serve',
      path,
      '--http',
      '127.0.0.1:0',
      '--flight',
      '127.0.0.1:0',
      '--data-dir',
      join(dir, 'data'),
    ]);

  it('a certificate file that is missing: serve fails and validate reports it', async () => {
    const path = await pod(
      'missing',
      '    enabled: true\n    certificate_file: absent.pem\n    key_file: other.key\n',
    );
    const message =
      "runtime.tls.certificate_file: 'absent.pem' cannot be read (ENOENT: no such file); give the path of a PEM file holding the certificate (chain)";
    const validate = await ferry(['validate', path]);
    expect(validate.code).toBe(1);
    expect(validate.stdout).toContain(`missing.yaml: ${message}`);
    const served = await serveOnce(path);
    expect(served.code).toBe(1);
    expect(served.stderr).toContain(message);
    expect(served.stdout).not.toContain('Listening on');
  });

  it("a key that is not the certificate's: serve fails and validate reports it", async () => {
    const path = await pod(
      'mismatch',
      '    enabled: true\n    certificate_file: cert.pem\n    key_file: other.key\n',
    );
    const validate = await ferry(['validate', path]);
    expect(validate.code).toBe(1);
    expect(validate.stdout).toMatch(
      /mismatch\.yaml: runtime\.tls\.key_file: is not the private key of the certificate in runtime\.tls\.certificate_file \(.*\); give the key that certificate was issued for/,
    );
    const served = await serveOnce(path);
    expect(served.code).toBe(1);
    expect(served.stderr).toContain('runtime.tls.key_file: is not the private key of the certificate');
  });

  it('an EC key beside the RSA certificate: OpenSSL loads the pair, but validate (and serve, by the same check) refuses it', async () => {
    // Before: validate said ok and serve listened, and every TLS handshake failed.
    const path = await pod('ec', '    enabled: true\n    certificate_file: cert.pem\n    key_file: ec.key\n');
    const validate = await ferry(['validate', path]);
    expect(validate.code).toBe(1);
    expect(validate.stdout).toContain(
      'ec.yaml: runtime.tls.key_file: is not the private key of the certificate in runtime.tls.certificate_file (the key does not match the certificate); give the key that certificate was issued for',
    );
  });
});
