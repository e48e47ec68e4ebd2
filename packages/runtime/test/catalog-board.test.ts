/**
 * The SQLite pool's catalog board: a worker reading while the host writes version after version
 * (of changing sizes) only ever takes a whole catalog of the version the board said, never an
 * older one than it had, and reads nothing while the version is the one it has. A catalog too large
 * for the board is not written on it (its tasks carry it).
 */
import { Worker } from 'node:worker_threads';
import { describe, expect, it } from 'vitest';
import { CatalogBoard, readCatalogBoard, shareCatalog } from '../src/query/catalog-board.js';

const catalog = (version: number) => ({
  version,
  datasets: Array.from({ length: 1 + (version % 40) }, (_, n) => ({
    name: `d${n}`,
    engine: 'sqlite' as const,
    generation: { id: version * 100 + n, path: `/data/${version}/${n}.sqlite`, snapshotId: version },
  })),
});

describe('CatalogBoard', () => {
  it('gives a reader the newest whole catalog, or nothing when it has that version', () => {
    const board = new CatalogBoard(64 * 1024);
    expect(readCatalogBoard(board.buffer, -1)).toBeUndefined();
    expect(board.publish(shareCatalog(catalog(3)))).toBe(true);
    expect(readCatalogBoard(board.buffer, -1)).toEqual(catalog(3));
    expect(readCatalogBoard(board.buffer, 3)).toBeUndefined();
    expect(board.publish(shareCatalog(catalog(4)))).toBe(true);
    expect(readCatalogBoard(board.buffer, 3)).toEqual(catalog(4));
  });

  it('does not hold a catalog larger than itself: readers see nothing new, tasks carry it', () => {
    const board = new CatalogBoard(256);
    expect(board.publish(shareCatalog(catalog(39)))).toBe(false);
    expect(readCatalogBoard(board.buffer, -1)).toBeUndefined();
  });

  it('never lets a worker read a torn or older catalog while the host writes', async () => {
    const board = new CatalogBoard(64 * 1024);
    board.publish(shareCatalog(catalog(1)));
    const stop = new Int32Array(new SharedArrayBuffer(4));
    const worker = new Worker(
      `
      const { parentPort, workerData } = require('node:worker_threads');
      import(workerData.module).then(({ readCatalogBoard }) => {
        const stop = new Int32Array(workerData.stop);
        let known = -1, reads = 0, bad = 0;
        parentPort.postMessage('ready');
        while (Atomics.load(stop, 0) === 0) {
          const next = readCatalogBoard(workerData.board, known);
          if (next === undefined) continue;
          reads++;
          const whole = next.datasets.length === 1 + (next.version % 40) &&
            next.datasets.every((d, n) => d.generation.snapshotId === next.version && d.generation.id === next.version * 100 + n);
          if (!whole || next.version < known) bad++;
          known = next.version;
        }
        parentPort.postMessage({ reads, bad, known });
      });
      `,
      {
        eval: true,
        workerData: {
          module: new URL('../src/query/catalog-board.ts', import.meta.url).href
            .replace('/src/', '/dist/')
            .replace(/\.ts$/, '.js'),
          board: board.buffer,
          stop: stop.buffer,
        },
      },
    );
    const messages: unknown[] = [];
    const report = new Promise<{ reads: number; bad: number; known: number }>((resolve) =>
      worker.on('message', (message: unknown) => {
        messages.push(message);
        if (message !== 'ready') resolve(message as { reads: number; bad: number; known: number });
      }),
    );
    while (messages.length === 0) await new Promise((resolve) => setTimeout(resolve, 5));
    for (let version = 2; version <= 3_000; version++) {
      board.publish(shareCatalog(catalog(version)));
      if (version % 20 === 0) await new Promise((resolve) => setTimeout(resolve, 1));
    }
    await new Promise((resolve) => setTimeout(resolve, 50));
    Atomics.store(stop, 0, 1);
    const { reads, bad, known } = await report;
    await worker.terminate();
    expect(bad).toBe(0);
    expect(reads).toBeGreaterThan(10);
    expect(known).toBe(3_000);
  });
});
