/**
 * Small helpers over node:http that every route uses: JSON and text responses, the JSON error
 * shape, and reading a request body with a size cap. A body over the cap is drained (not
 * buffered) before the 413 is sent, so the client reads the answer instead of a reset connection.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { BodyTooLargeError, errorCode, httpStatusFor } from './errors.js';

/** The JSON body of every error response. */
export interface ErrorBody {
  readonly error: string;
  readonly code?: string;
}

export function sendJson(
  res: ServerResponse,
  status: number,
  value: unknown,
  headers: Readonly<Record<string, string>> = {},
): void {
  const body = JSON.stringify(value);
  res.writeHead(status, {
    ...headers,
    'content-type': 'application/json; charset=utf-8',
    'content-length': Buffer.byteLength(body),
  });
  res.end(body);
}

export function sendText(
  res: ServerResponse,
  status: number,
  text: string,
  headers: Readonly<Record<string, string>> = {},
): void {
  res.writeHead(status, {
    'content-type': 'text/plain; charset=utf-8',
    ...headers,
    'content-length': Buffer.byteLength(text),
  });
  res.end(text);
}

/** Answers with the error's HTTP status and `{ error, code }`; returns the status sent. */
export function sendError(
  res: ServerResponse,
  error: unknown,
  headers: Readonly<Record<string, string>> = {},
): number {
  const status = httpStatusFor(error);
  const code = errorCode(error);
  const message =
    status === 500 && code === undefined
      ? 'Internal server error; see the server log for details.'
      : error instanceof Error
        ? error.message
        : String(error);
  const body: ErrorBody = code === undefined ? { error: message } : { error: message, code };
  if (res.headersSent) {
    res.destroy();
  } else {
    sendJson(res, status, body, headers);
  }
  return status;
}

/** Reads the whole body, rejecting with {@link BodyTooLargeError} (after draining the rest) above `limit` bytes. */
export function readBody(req: IncomingMessage, limit: number): Promise<Buffer> {
  return new Promise<Buffer>((resolve, reject) => {
    const declared = Number(req.headers['content-length']);
    let size = 0;
    let overflow = Number.isFinite(declared) && declared > limit;
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => {
      if (overflow) return;
      size += chunk.length;
      if (size > limit) {
        overflow = true;
        chunks.length = 0;
      } else {
        chunks.push(chunk);
      }
    });
    req.on('end', () => {
      if (overflow) reject(new BodyTooLargeError(limit));
      else resolve(Buffer.concat(chunks));
    });
    req.on('error', reject);
  });
}
