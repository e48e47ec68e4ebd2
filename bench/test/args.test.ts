/** `pnpm bench`'s command line (args.ts): help, and bad arguments refused saying what is wrong. */
import { describe, expect, it } from 'vitest';
import { parseArgs, USAGE } from '../src/args.js';

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
