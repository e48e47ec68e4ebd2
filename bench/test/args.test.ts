/** `pnpm bench`'s command line (args.ts): help, and bad arguments refused saying what is wrong. */
import { describe, expect, it } from 'vitest';
import { parseArgs, readToolOptions, toolUsage, USAGE } from '../src/args.js';

describe('parseArgs', () => {
  it('answers --help and -h as a request for the usage, not as an error', () => {
    expect(parseArgs(['--help'])).toMatchObject({ help: true });
    expect(parseArgs(['b1', '-h'])).toMatchObject({ help: true });
    expect(parseArgs(['b1', '--quick'])).toMatchObject({ help: false, scenarios: ['b1'], quick: true });
  });

  it('calls a misspelt option an unknown option, not an unknown scenario', () => {
    expect(() => parseArgs(['--quik'])).toThrow(`Unknown option '--quik'.\n${USAGE}`);
    expect(() => parseArgs(['b99'])).toThrow(`Unknown scenario 'b99'.\n${USAGE}`);
  });

  it('refuses --minutes for a run without soak, whose length it would not change', () => {
    expect(() => parseArgs(['b2', '--minutes', '5'])).toThrow(
      `--minutes sets the soak's length; name soak to run it (pnpm bench soak --minutes 5).\n${USAGE}`,
    );
    expect(parseArgs(['soak', '--minutes', '5'])).toMatchObject({ scenarios: ['soak'], minutes: 5 });
  });
});

describe('readToolOptions (cpu-split.js, gc-split.js, duckdb-calls.js)', () => {
  const defaults = { seconds: 8, rounds: 3 };

  it('answers --help and -h as a request for the usage, which names every option and its default', () => {
    expect(readToolOptions('cpu-split', ['--help'], defaults)).toEqual({ help: true, values: defaults });
    expect(readToolOptions('cpu-split', ['-h'], defaults).help).toBe(true);
    expect(toolUsage('cpu-split', defaults)).toBe(
      'usage: node bench/dist/cpu-split.js [--seconds 8] [--rounds 3]',
    );
  });

  it('reads whole numbers and keeps the defaults of the options not given', () => {
    expect(readToolOptions('cpu-split', ['--seconds', '2'], defaults)).toEqual({
      help: false,
      values: { seconds: 2, rounds: 3 },
    });
  });

  it('refuses an unknown option or a bad value with a message and the usage, as an Error of its own', () => {
    const usage = toolUsage('cpu-split', defaults);
    expect(() => readToolOptions('cpu-split', ['--bogus'], defaults)).toThrow(
      new Error(`Unknown option '--bogus'.\n${usage}`),
    );
    expect(() => readToolOptions('cpu-split', ['--seconds', '0'], defaults)).toThrow(
      new Error(`--seconds wants a whole number of at least 1, not 0.\n${usage}`),
    );
    expect(() => readToolOptions('cpu-split', ['extra'], defaults)).toThrow(
      new Error(`Unexpected argument 'extra'.\n${usage}`),
    );
  });
});
