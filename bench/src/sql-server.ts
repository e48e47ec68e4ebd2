/**
 * The HTTP side of B9's baselines (`plain-server.ts`, `threaded-server.ts`): `node:http` taking
 * `POST /v1/sql` with the SQL as a text body and answering the JSON text `answer` gives (400 with
 * `{ error }` when it fails), keep-alive on. Prints `Listening on http://HOST:PORT` once it accepts
 * requests; ends on SIGTERM.
 */
import { createServer, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export function serveSql(answer: (sql: string) => Promise<string>): void {
  const send = (res: ServerResponse, status: number, body: string): void => {
    res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
    res.end(body);
  };
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      answer(Buffer.concat(chunks).toString('utf8')).then(
        (body) => send(res, 200, body),
        (error: unknown) => send(res, 400, JSON.stringify({ error: (error as Error).message })),
      );
    });
  });
  server.keepAliveTimeout = 60_000;
  server.listen(0, '127.0.0.1', () => {
    const { address, port } = server.address() as AddressInfo;
    process.stdout.write(`Listening on http://${address}:${port}\n`);
  });
  process.on('SIGTERM', () => {
    server.close();
    process.exit(0);
  });
}
