/**
 * The error body every route answers with, and small helpers for routes that write the raw
 * node:http response themselves (extra routes, the inspector): JSON and text responses and the
 * JSON error. The fastify routes send the same error body through the server's error handler.
 */
import type { ServerResponse } from 'node:http';
import { errorCode, errorHeaders, httpStatusFor } from './errors.js';

/** The JSON body of every error response. */
export interface ErrorBody {
  readonly error: string;
  readonly code?: string;
}

/** The status, body and headers (`Retry-After` for a refused query) a request failing with `error` answers with. */
export function errorResponse(error: unknown): {
  readonly status: number;
  readonly body: ErrorBody;
  readonly headers: Readonly<Record<string, string>>;
} {
  const status = httpStatusFor(error);
  const code = errorCode(error);
  const message =
    status === 500 && code === undefined
      ? 'Internal server error; see the server log for details.'
      : error instanceof Error
        ? error.message
        : String(error);
  return {
    status,
    body: code === undefined ? { error: message } : { error: message, code },
    headers: errorHeaders(error),
  };
}

export function sendJson(
  res: ServerResponse,
  status: number,
  value: unknown,
  headers: Readonly<Record<string, string>> = {},
): void {
  sendJsonText(res, status, JSON.stringify(value), headers);
}

/** Sends `body`, JSON text already made. */
export function sendJsonText(
  res: ServerResponse,
  status: number,
  body: string,
  headers: Readonly<Record<string, string>> = {},
): void {
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
  const response = errorResponse(error);
  const { status, body } = response;
  if (res.headersSent) {
    res.destroy();
  } else {
    sendJson(res, status, body, { ...response.headers, ...headers });
  }
  return status;
}
