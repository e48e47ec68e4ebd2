/**
 * gc-split's reading of V8's `--trace-gc-nvp` (gc-trace.ts), on lines as V8 prints them (taken from
 * a run of `ferry serve`, the fields it does not read left out).
 */
import { describe, expect, it } from 'vitest';
import { firstIsolate, sumCollections } from '../src/gc-trace.js';

const LINES = [
  '[16993:0x2d9ad0e0]       64 ms: pause=2.3 mutator=57.3 gc=s scavenge=1.74 background.scavenge.parallel=1.19 total_size_before=4212696 allocated=4212696 promoted=0 new_space_survived=305192',
  'Listening on http://127.0.0.1:40123',
  '[16993:0x7f3dac000f00]       48 ms: pause=4.1 mutator=41.5 gc=s scavenge=3.14 background.scavenge.parallel=0.00 total_size_before=3307944 allocated=3307944 promoted=0 new_space_survived=581192',
  '[16993:0x2d9ad0e0]       85 ms: pause=1.7 mutator=19.8 gc=s scavenge=1.69 background.scavenge.parallel=1.09 total_size_before=4594160 allocated=958792 promoted=261008 new_space_survived=241160',
  '[16993:0x2d9ad0e0]      407 ms: pause=5.2 mutator=39.7 gc=mc total_size_before=12622952 allocated=2059280 promoted=1330000 new_space_survived=0',
];

describe('sumCollections', () => {
  it('sums scavenges per isolate, mark-compacts apart, in the order isolates appear', () => {
    const isolates = sumCollections(LINES);
    expect([...isolates.keys()]).toEqual(['0x2d9ad0e0', '0x7f3dac000f00']);
    const main = isolates.get('0x2d9ad0e0');
    expect(main?.scavenges).toBe(2);
    expect(main?.scavengeMs).toBeCloseTo(4.0, 5);
    expect(main?.backgroundMs).toBeCloseTo(2.28, 5);
    // A mark-compact's own allocated and promoted are not a scavenge's.
    expect(main?.allocated).toBe(4212696 + 958792);
    expect(main?.survived).toBe(305192 + 241160);
    expect(main?.promoted).toBe(261008);
    expect(main?.markCompacts).toBe(1);
    expect(main?.markCompactMs).toBeCloseTo(5.2, 5);
    expect(isolates.get('0x7f3dac000f00')).toMatchObject({
      scavenges: 1,
      allocated: 3307944,
      markCompacts: 0,
    });
  });

  it('reads nothing from lines that are not collections', () => {
    expect(sumCollections(['Listening on http://127.0.0.1:1', '{"level":"warn"}']).size).toBe(0);
  });

  it('takes the isolate that started first for the main thread, whichever collected first', () => {
    // The worker's line came first, but 48 ms into a worker that started at 1,952 against 64 ms
    // into the main thread that started at 1,900.
    const read = [
      { line: LINES[2] as string, at: 2_000 },
      { line: LINES[0] as string, at: 1_964 },
      { line: LINES[1] as string, at: 1_800 },
    ];
    expect(firstIsolate(read)).toBe('0x2d9ad0e0');
    expect(
      firstIsolate([
        { line: LINES[2] as string, at: 2_000 },
        { line: LINES[0] as string, at: 2_070 },
      ]),
    ).toBe('0x7f3dac000f00');
    expect(firstIsolate([])).toBeUndefined();
  });
});
