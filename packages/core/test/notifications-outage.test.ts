import { describe, expect, it } from 'vitest';
import { createOutageTracker, formatOutageDuration, type PlannedLog } from '../src/notifications/index.js';

type Step = [call: 'failure' | 'success', nowMs: number, expected: PlannedLog | undefined];

const started: PlannedLog = {
  level: 'warn',
  message: 'Cannot reach the SQS queue; retrying with backoff',
  fields: { error: 'connect ECONNREFUSED' },
};

function longOutage(outageMs: number): PlannedLog {
  return {
    level: 'error',
    message: 'Still cannot reach the SQS queue after 5 min; new snapshots are not noticed until it recovers',
    fields: { outageMs, error: 'connect ECONNREFUSED' },
  };
}

function recovered(outageMs: number, duration: string): PlannedLog {
  return {
    level: 'info',
    message: `Reached the SQS queue again after an outage of ${duration}`,
    fields: { outageMs },
  };
}

const scenarios: Array<{ name: string; steps: Step[] }> = [
  {
    name: 'no outage logs nothing',
    steps: [
      ['success', 0, undefined],
      ['success', 20_000, undefined],
    ],
  },
  {
    name: 'a short outage warns once, then reports its duration',
    steps: [
      ['success', 0, undefined],
      ['failure', 1_000, started],
      ['failure', 2_000, undefined],
      ['failure', 4_000, undefined],
      ['success', 13_400, recovered(12_400, '12 s')],
      ['success', 14_000, undefined],
    ],
  },
  {
    name: 'a long outage adds one error at five minutes',
    steps: [
      ['failure', 10_000, started],
      ['failure', 309_999, undefined],
      ['failure', 310_000, longOutage(300_000)],
      ['failure', 340_000, undefined],
      ['failure', 900_000, undefined],
      ['success', 922_000, recovered(912_000, '15 min 12 s')],
    ],
  },
  {
    name: 'the error comes at the first failure past five minutes',
    steps: [
      ['failure', 0, started],
      ['failure', 330_000, longOutage(330_000)],
      ['success', 360_000, recovered(360_000, '6 min')],
    ],
  },
  {
    name: 'a second outage starts over',
    steps: [
      ['failure', 0, started],
      ['failure', 300_000, longOutage(300_000)],
      ['success', 301_000, recovered(301_000, '5 min 1 s')],
      ['failure', 400_000, started],
      ['failure', 700_000, longOutage(300_000)],
    ],
  },
];

describe('outage tracker', () => {
  it.each(scenarios)('$name', ({ steps }) => {
    const tracker = createOutageTracker();
    for (const [call, nowMs, expected] of steps) {
      const log =
        call === 'failure' ? tracker.failure(nowMs, 'connect ECONNREFUSED') : tracker.success(nowMs);
      expect({ call, nowMs, log }).toEqual({ call, nowMs, log: expected });
    }
  });

  it('counts consecutive failures for the backoff', () => {
    const tracker = createOutageTracker();
    tracker.failure(0);
    tracker.failure(1_000);
    expect(tracker.consecutiveFailures).toBe(2);
    tracker.success(3_000);
    expect(tracker.consecutiveFailures).toBe(0);
  });

  it('uses the description it is given, and omits a missing error', () => {
    const tracker = createOutageTracker({ description: 'the notification queue', errorAfterMs: 60_000 });
    expect(tracker.failure(0)).toEqual({
      level: 'warn',
      message: 'Cannot reach the notification queue; retrying with backoff',
      fields: {},
    });
    expect(tracker.failure(60_000)).toEqual({
      level: 'error',
      message:
        'Still cannot reach the notification queue after 1 min; new snapshots are not noticed until it recovers',
      fields: { outageMs: 60_000 },
    });
  });
});

describe('formatOutageDuration', () => {
  it.each([
    [0, '0 s'],
    [4_200, '4 s'],
    [59_499, '59 s'],
    [60_000, '1 min'],
    [312_000, '5 min 12 s'],
  ])('%i ms reads %s', (ms, expected) => {
    expect(formatOutageDuration(ms)).toBe(expected);
  });
});
