/**
 * Spice's secrets as its runtime resolves them: the `secrets:` stores (env stores read, every other
 * store refused by name), `${secrets:KEY}` asking every store and `${<store>:KEY}` one, the env
 * store's upper-cased `SPICE_<KEY>` / `<KEY>` lookup and its dotenv files, and no resolved value
 * ever shown in a message.
 */
import { describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { parseDotenv, redactSecrets } from '../src/config/secrets.js';
import { loadSpicepod } from '../src/config/spicepod.js';
import { filesOf } from './config-files.js';

function load(
  extra: Record<string, unknown>,
  env: Record<string, string> = {},
  files: Record<string, string> = {},
  extraParams: Record<string, unknown> = {},
) {
  const pod = {
    version: 'v1',
    kind: 'Spicepod',
    name: 'secrets',
    snapshots: {
      location: 's3://bucket/prefix/',
      params: {
        s3_region: `\${secrets:region}`,
        s3_key: `\${secrets:key}`,
        s3_secret: `\${env:SECRET}`,
        ...extraParams,
      },
    },
    datasets: [
      {
        from: 'postgres:public.orders',
        name: 'orders',
        acceleration: { engine: 'duckdb', mode: 'file', refresh_mode: 'snapshot', snapshots: 'enabled' },
      },
    ],
    ...extra,
  };
  return loadSpicepod(stringify(pod), {
    file: 'spicepod.yaml',
    env,
    readFile: filesOf(files),
  });
}

const messages = (result: ReturnType<typeof load>): string[] => result.errors.map((issue) => issue.message);

describe('the env secret store', () => {
  it('upper-cases the key and prefers SPICE_<KEY>, as Spice does', () => {
    const result = load(
      {},
      { REGION: 'eu-west-1', SPICE_KEY: 'AKIAPREFIXED', KEY: 'AKIAPLAIN', SECRET: 'shh-secret' },
    );
    expect(result.errors).toStrictEqual([]);
    expect(result.config?.snapshots?.s3).toMatchObject({
      region: 'eu-west-1',
      credentials: { accessKeyId: 'AKIAPREFIXED', secretAccessKey: 'shh-secret' },
    });
  });

  it('reads .env.local then .env beside the spicepod, the environment winning', () => {
    const result = load(
      {},
      { SECRET: 'from-the-environment' },
      {
        '.env.local': 'REGION=ap-south-1\n# a comment\n',
        '.env': 'REGION=us-east-2\nexport KEY="AKIA-QUOTED"\nSECRET=from-dotenv\n',
      },
    );
    expect(result.errors).toStrictEqual([]);
    expect(result.config?.snapshots?.s3).toMatchObject({
      region: 'ap-south-1',
      credentials: { accessKeyId: 'AKIA-QUOTED', secretAccessKey: 'from-the-environment' },
    });
  });

  it('reads a store’s params.file_path instead of the default files', () => {
    const result = load(
      { secrets: [{ from: 'env', name: 'env', params: { file_path: 'prod.env' } }] },
      {},
      { 'prod.env': "REGION=eu-north-1\nKEY='AKIAFILE'\nSECRET=file-secret\n", '.env': 'REGION=wrong' },
    );
    expect(result.errors).toStrictEqual([]);
    expect(result.config?.snapshots?.s3?.region).toBe('eu-north-1');
    expect(result.config?.secretStores).toStrictEqual([{ name: 'env', from: 'env', filePath: 'prod.env' }]);
  });

  it(`asks the store defined last first for \${secrets:…}, and one store by its name`, () => {
    const result = load(
      {
        secrets: [
          { from: 'env', name: 'base', params: { file_path: 'base.env' } },
          { from: 'env', name: 'override', params: { file_path: 'override.env' } },
        ],
        runtime: { auth: { api_key: { keys: [`\${base:KEY}`] } } },
      },
      // ${env:SECRET} asks the environment: no store is named env here.
      { SECRET: 's3cr3t' },
      {
        'base.env': 'REGION=base-region\nKEY=AKIABASE\nSECRET=not-read',
        'override.env': 'REGION=override-region',
      },
    );
    expect(result.errors).toStrictEqual([]);
    expect(result.config?.snapshots?.s3?.region).toBe('override-region');
    expect(result.config?.auth?.apiKeys).toStrictEqual([{ key: 'AKIABASE', access: 'read' }]);
  });
});

describe('secret problems', () => {
  it.each([
    [
      'a store this runtime does not read',
      { secrets: [{ from: 'aws_secrets_manager:prod', name: 'aws' }] },
      "spicepod.yaml: secrets[0].from: Spice's aws_secrets_manager secret store is not read by this runtime (it reads environment variables only), so the values it holds would be missing; use from: env and set them as environment variables (or in a .env file)",
    ],
    [
      'a kubernetes store',
      { secrets: [{ from: 'kubernetes:my-secret', name: 'k8s' }] },
      "spicepod.yaml: secrets[0].from: Spice's kubernetes secret store is not read by this runtime (it reads environment variables only), so the values it holds would be missing; use from: env and set them as environment variables (or in a .env file)",
    ],
    [
      "Spice's older map form with another store",
      { secrets: { store: 'keyring' } },
      "spicepod.yaml: secrets.store: Spice's keyring secret store is not read by this runtime (it reads environment variables only), so the values it holds would be missing; use from: env and set them as environment variables (or in a .env file)",
    ],
    [
      'a store without a name',
      { secrets: [{ from: 'env' }] },
      `spicepod.yaml: secrets[0].name: missing; name the store (it is referenced as \${<name>:KEY})`,
    ],
    [
      'a reference to a store not defined',
      {
        secrets: [{ from: 'env', name: 'local' }],
        runtime: { auth: { api_key: { keys: [`\${vault:KEY}`] } } },
      },
      `spicepod.yaml: runtime.auth.api_key.keys[0]: references secret store 'vault', which the spicepod does not define; use \${secrets:KEY} (an environment variable) or add a store named 'vault' to secrets`,
    ],
    [
      'a secret not set',
      {},
      "spicepod.yaml: snapshots.params.s3_region: references secret 'region', which is not set; set the environment variable REGION",
    ],
  ])('%s stops the pod, naming the key', (_name, extra, message) => {
    const result = load(extra, { KEY: 'AKIAEXAMPLE', SECRET: 'x-secret-value' });
    expect(messages(result)).toContain(message);
    expect(result.fatal).toBe(true);
  });

  it('never shows a resolved secret in an error or a warning, wherever it was used', () => {
    const result = load(
      {
        runtime: { tls: { enabled: true, certificate: `\${secrets:CERT}`, key_file: `\${secrets:KEY}` } },
        views: [{ name: 'v', sql: 'SELECT 1', dependsOn: [`\${secrets:KEY}`] }],
      },
      {
        REGION: 'hunter2-as-region',
        KEY: 'AKIA-TOP-SECRET',
        SECRET: 'hunter2-hunter2',
        CERT: 'hunter2-hunter2 is no certificate',
        ENDPOINT: 'hunter2-endpoint',
      },
      {},
      { s3_endpoint: `\${secrets:ENDPOINT}` },
    );
    const all = [...result.errors, ...result.warnings].map((issue) => issue.message).join('\n');
    expect(all).not.toContain('hunter2');
    expect(all).not.toContain('AKIA-TOP-SECRET');
    // A message that quotes the value quotes the reference instead.
    expect(all).toContain(`'\${secrets:ENDPOINT}'`);
  });
});

describe('parseDotenv and redactSecrets', () => {
  it('reads KEY=value lines as dotenv writes them', () => {
    expect(
      parseDotenv(
        'A=1\n# note\nexport B = two words # comment\nC="x\\ny"\nD=\'lit #\'\nA=again\nnot a line\n',
      ),
    ).toStrictEqual({ A: '1', B: 'two words', C: 'x\ny', D: 'lit #' });
  });

  it('reads a quoted value followed by a comment as the text between the quotes (as dotenvy does)', () => {
    // Before: A was '"abc"', quotes included, so the key or password held two extra characters.
    expect(
      parseDotenv('A="abc" # prod key\nB=\'x y\'  # note\nC="say \\"hi\\"" #c\nD="open # not closed\n'),
    ).toStrictEqual({ A: 'abc', B: 'x y', C: 'say "hi"', D: '"open' });
  });

  it('puts the reference where the value was, longest value first', () => {
    expect(
      redactSecrets('key abcd and abcdef', [
        { value: 'abcd', reference: `\${secrets:SHORT}` },
        { value: 'abcdef', reference: `\${secrets:LONG}` },
      ]),
    ).toBe(`key \${secrets:SHORT} and \${secrets:LONG}`);
  });
});
