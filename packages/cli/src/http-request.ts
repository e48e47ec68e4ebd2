/**
 * One HTTP request to a `ferry serve`, with node's HTTP client rather than fetch(): fetch refuses
 * the ports browsers block (10080, 6000, 6665–6669, …) as a 'bad port', and `ferry serve --http`
 * may listen on any of them. A connection error, or no answer within the timeout, rejects with the
 * error's `code` (`ECONNREFUSED`, `ETIMEDOUT`, …).
 */
import { request as httpRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';

const REQUEST_TIMEOUT_MS = 10_000;

export interface HttpAnswer {
  readonly ok: boolean;
  readonly status: number;
  readonly text: string;
}

export function requestText(
  url: string,
  options: {
    readonly method?: string;
    readonly headers?: Record<string, string>;
    readonly body?: string;
  } = {},
): Promise<HttpAnswer> {
  return new Promise((resolve, reject) => {
    const send = url.startsWith('https:') ? httpsRequest : httpRequest;
    const request = send(
      url,
      { method: options.method ?? 'GET', headers: options.headers, timeout: REQUEST_TIMEOUT_MS },
      (response) => {
        let text = '';
        response.setEncoding('utf8');
        response.on('data', (chunk: string) => {
          text += chunk;
        });
        response.on('error', reject);
        response.on('end', () => {
          const status = response.statusCode ?? 0;
          resolve({ ok: status >= 200 && status < 300, status, text });
        });
      },
    );
    request.on('timeout', () =>
      request.destroy(Object.assign(new Error('timed out'), { code: 'ETIMEDOUT' })),
    );
    request.on('error', reject);
    request.end(options.body);
  });
}
