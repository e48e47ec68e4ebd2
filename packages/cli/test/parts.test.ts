/** The CLI's small parts in-process: log formats, --http parsing, tables and progress output. */
import { describe, expect, it } from 'vitest';
import {
  createCliLogger,
  createProgress,
  formatTable,
  parseListenAddress,
  serverUrl,
  UsageError,
} from '../src/index.js';

function sink(isTTY = false) {
  const chunks: string[] = [];
  return { chunks, isTTY, columns: 100, write: (text: string) => chunks.push(text) };
}

describe('createCliLogger', () => {
  const now = () => new Date(2026, 10, 29, 8, 4, 5, 123);

  it('writes one JSON object a line with time, level, fields and msg; errors become plain objects', () => {
    const out = sink();
    const logger = createCliLogger({ sink: out, format: 'json', now });
    const error = Object.assign(new Error('disk full'), { code: 'ERR_X' });
    logger.warn({ component: 'dataset', dataset: 'orders', err: error }, 'Swap failed');
    expect(out.chunks).toHaveLength(1);
    const line = out.chunks[0] as string;
    expect(line.endsWith('\n')).toBe(true);
    const record = JSON.parse(line) as Record<string, unknown>;
    expect(record).toMatchObject({
      time: now().toISOString(),
      level: 'warn',
      component: 'dataset',
      dataset: 'orders',
      msg: 'Swap failed',
      err: { type: 'Error', message: 'disk full', code: 'ERR_X' },
    });
  });

  it('makes plain objects of errors under any field, and adds no pid or hostname', () => {
    const out = sink();
    const logger = createCliLogger({ sink: out, format: 'json', now });
    logger.error({ component: 'server', error: new TypeError('bad body') }, 'Request failed');
    const record = JSON.parse(out.chunks[0] as string) as Record<string, unknown>;
    expect(record.error).toMatchObject({ type: 'TypeError', message: 'bad body' });
    expect((record.error as { stack?: unknown }).stack).toEqual(
      expect.stringContaining('TypeError: bad body'),
    );
    expect(Object.keys(record).sort()).toEqual(['component', 'error', 'level', 'msg', 'time']);
  });

  it('writes pretty lines: time, level, dataset (or component), message', () => {
    const out = sink(true);
    const logger = createCliLogger({ sink: out, format: 'pretty', now });
    logger.info({ component: 'dataset', dataset: 'orders' }, 'Swapped to snapshot 3');
    logger.error({ component: 'server' }, 'Boom');
    expect(out.chunks).toEqual([
      '08:04:05.123 INFO  orders       Swapped to snapshot 3\n',
      '08:04:05.123 ERROR server       Boom\n',
    ]);
  });

  it('drops records below the level', () => {
    const out = sink();
    const logger = createCliLogger({ sink: out, format: 'json', level: 'warn', now });
    logger.debug({}, 'a');
    logger.info({}, 'b');
    logger.warn({}, 'c');
    expect(out.chunks.map((line) => (JSON.parse(line) as { msg: string }).msg)).toEqual(['c']);
  });
});

describe('--http addresses', () => {
  it('parses host:port forms', () => {
    expect(parseListenAddress('serve', '127.0.0.1:8090')).toEqual({ host: '127.0.0.1', port: 8090 });
    expect(parseListenAddress('serve', '0.0.0.0:0')).toEqual({ host: '0.0.0.0', port: 0 });
    expect(parseListenAddress('serve', '[::1]:9000')).toEqual({ host: '::1', port: 9000 });
    expect(parseListenAddress('serve', ':9000')).toEqual({ host: '127.0.0.1', port: 9000 });
    expect(parseListenAddress('serve', '9000')).toEqual({ host: '127.0.0.1', port: 9000 });
    expect(parseListenAddress('serve', 'localhost:80')).toEqual({ host: 'localhost', port: 80 });
  });

  it('refuses anything else as a usage error', () => {
    for (const bad of ['nowhere', 'host:', 'host:99999', '::1:80', 'a:b']) {
      expect(() => parseListenAddress('serve', bad), bad).toThrow(UsageError);
    }
  });

  it('turns an address into a server URL', () => {
    expect(serverUrl('status', '127.0.0.1:8090')).toBe('http://127.0.0.1:8090');
    expect(serverUrl('status', '0.0.0.0:8090')).toBe('http://127.0.0.1:8090');
    expect(serverUrl('status', '[::1]:8090')).toBe('http://[::1]:8090');
    expect(serverUrl('status', 'https://ferry.internal/')).toBe('https://ferry.internal');
  });
});

describe('formatTable', () => {
  it('pads columns to their widest cell', () => {
    expect(
      formatTable(
        ['A', 'LONG'],
        [
          ['xyz', '1'],
          ['q', '-'],
        ],
      ),
    ).toBe('A    LONG\nxyz  1\nq    -\n');
  });
});

describe('createProgress', () => {
  it('prints a plain line per quarter when not on a terminal', () => {
    const out = sink(false);
    const progress = createProgress(out, 'Uploading orders');
    for (let bytes = 0; bytes <= 1000; bytes += 100) progress.update(bytes, 1000);
    progress.done();
    expect(out.chunks).toEqual([
      'Uploading orders: 0% (0 B of 1000 B)\n',
      'Uploading orders: 30% (300 B of 1000 B)\n',
      'Uploading orders: 50% (500 B of 1000 B)\n',
      'Uploading orders: 80% (800 B of 1000 B)\n',
      'Uploading orders: 100% (1000 B of 1000 B)\n',
    ]);
  });

  it('redraws one bar in place on a terminal and ends its line', () => {
    const out = sink(true);
    const progress = createProgress(out, 'Uploading orders');
    progress.update(0, 2048);
    progress.update(2048, 2048);
    progress.done();
    expect(out.chunks[0]).toMatch(/^\rUploading orders \[-+\] {3}0% 0 B \/ 2\.0 KiB$/);
    expect(out.chunks[1]).toMatch(/^\rUploading orders \[#+\] 100% 2\.0 KiB \/ 2\.0 KiB$/);
    expect(out.chunks[2]).toBe('\n');
  });
});
