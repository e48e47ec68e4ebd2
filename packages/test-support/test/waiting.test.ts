/** The test logger's waitFor: the first `count` matching lines, exactly, however many came before the call. */
import { describe, expect, it } from 'vitest';
import { watchedLogger } from '../src/waiting.js';

describe('watchedLogger().waitFor', () => {
  it('resolves with exactly the first `count` matches when more were logged before the call', async () => {
    const logger = watchedLogger();
    for (const n of [1, 2, 3]) logger.warn({ n }, 'again');
    const lines = await logger.waitFor((r) => r.message === 'again', { count: 2 });
    expect(lines.map((r) => r.fields.n)).toEqual([1, 2]);
  });

  it('waits for lines logged after the call, counting from `since`', async () => {
    const logger = watchedLogger();
    logger.info({ n: 0 }, 'again');
    const mark = logger.records.length;
    const waiting = logger.waitFor((r) => r.message === 'again', { since: mark, count: 2 });
    logger.info({ n: 1 }, 'again');
    logger.info({ n: 2 }, 'other');
    logger.info({ n: 3 }, 'again');
    logger.info({ n: 4 }, 'again');
    expect((await waiting).map((r) => r.fields.n)).toEqual([1, 3]);
  });
});
