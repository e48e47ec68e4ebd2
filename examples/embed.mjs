/**
 * Embedding Ferry in an application: serve a file:// snapshot store in-process, query it (rows with
 * a parameter, an Arrow table), see a write refused, close, and let the process end by itself.
 * Run it where @ferry/runtime is installed: `node embed.mjs file:///abs/path/to/store/` (a store in
 * Spice's snapshot layout, such as the one `ferry serve --example` lays out, holding `orders` in
 * DuckDB and `users` in SQLite). scripts/embed-check.sh runs it from packed tarballs.
 */
import { createRuntime, WriteRejectedError } from '@ferry/runtime';

const location = process.argv[2] ?? 'file:///srv/snapshots/';
const dataset = (name, engine) =>
  `  - { from: 'postgres:public.${name}', name: ${name}, acceleration: { engine: ${engine}, mode: file, refresh_mode: snapshot, snapshots: enabled } }`;
const yaml = [
  'version: v1',
  'kind: Spicepod',
  'name: embedded',
  `snapshots: { location: '${location}' }`,
  'datasets:',
  dataset('orders', 'duckdb'),
  dataset('users', 'sqlite'),
].join('\n');

const runtime = await createRuntime({ yaml }, { dataDir: '.ferry/data' });
runtime.on('swap', ({ dataset: name, to }) => console.error(`${name} now serves snapshot ${to}`));
await runtime.ready(undefined, { timeoutMs: 60_000 });

const { rows } = await runtime.query('SELECT id, customer FROM orders WHERE id = ?', [4]);
console.log(`orders row 4: ${JSON.stringify(rows[0])}`);

const { table, datasets } = await runtime.queryArrow('SELECT count(*) AS n FROM users');
console.log(`users: ${table.getChild('n')?.get(0)} rows (Arrow), snapshot ${datasets[0]?.snapshotId}`);

try {
  await runtime.query('DELETE FROM orders');
} catch (error) {
  if (!(error instanceof WriteRejectedError)) throw error;
  console.log(`refused: ${error.code}`);
}

await runtime.close();
console.log('closed');
