import { DuckDBInstance } from '@duckdb/node-api';

const [path, conns, threads] = [process.argv[2], Number(process.argv[3]), process.argv[4]];
const inst = await DuckDBInstance.create(':memory:', threads ? { threads } : {});
const cs = [];
for (let i = 0; i < conns; i++) {
  const c = await inst.connect();
  cs.push(c);
}
await cs[0].run(`ATTACH '${path}' AS d (READ_ONLY)`);
const t = (
  await cs[0].runAndReadAll(`SELECT table_name FROM information_schema.tables WHERE table_catalog='d'`)
).getRows()[0][0];
let syncMs = 0,
  n = 0;
const t0 = performance.now();
const stop = t0 + 4000;
const elu0 = performance.eventLoopUtilization();
await Promise.all(
  cs.map(async (c) => {
    while (performance.now() < stop) {
      const s = performance.now();
      const p = c.prepare(
        `SELECT category, amount FROM d.${t} WHERE id = ${Math.floor(Math.random() * 200000)}`,
      );
      syncMs += performance.now() - s;
      const st = await p;
      const s2 = performance.now();
      const rp = st.run();
      syncMs += performance.now() - s2;
      const r = await rp;
      const s3 = performance.now();
      const cp = r.fetchChunk();
      syncMs += performance.now() - s3;
      await cp;
      n++;
      st.destroySync();
    }
  }),
);
const total = performance.now() - t0;
console.log({
  conns,
  threads,
  qps: Math.round((n / total) * 1000),
  syncPerQueryMs: (syncMs / n).toFixed(3),
  elu: performance.eventLoopUtilization(elu0).utilization.toFixed(2),
});
