import { describe, expect, it } from 'vitest';
import { createOutageTracker, formatOutageDuration, type PlannedLog } from '../src/notifications/index.js';

type Step = [call: 'failure' | 'success', nowMs: number, expected: PlannedLog | undefined];

const LOCATION = 's3://bucket/snapshots';
const CAUSE = 'connect ECONNREFUSED';
const TAIL =
  ', so datasets with `refresh_mode: snapshot` fall back to checking the location every `refresh_check_interval` until it recovers. ' +
  'Cause: connect ECONNREFUSED. Check the queue URL and the `sqs:ReceiveMessage` permission. See: https://spiceai.org/docs/features/data-acceleration/snapshots';

/** Spice's outage line, word for word. */
function outageLine(lasted?: string): string {
  return `Failed to receive S3 event notifications from the SQS queue in \`s3_queue_url\` for snapshot location 's3://bucket/snapshots'${lasted === undefined ? '' : ` for ${lasted}`}${TAIL}`;
}

const started: PlannedLog = { level: 'warn', message: outageLine(), fields: {} };

function longOutage(outageMs: number, lasted: string): PlannedLog {
  return { level: 'error', message: outageLine(lasted), fields: { outageMs } };
}

function quiet(outageMs: number, lasted: string): PlannedLog {
  return { level: 'debug', message: outageLine(lasted), fields: { outageMs } };
}

function recovered(outageMs: number, duration: string): PlannedLog {
  return {
    level: 'info',
    message: `Snapshot location 's3://bucket/snapshots' is receiving S3 event notifications from the SQS queue in \`s3_queue_url\` again after ${duration}, so datasets with \`refresh_mode: snapshot\` reload as soon as a new snapshot is published.`,
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
      ['failure', 2_000, quiet(1_000, '1s')],
      ['failure', 4_000, quiet(3_000, '3s')],
      ['success', 13_400, recovered(12_400, '12s')],
      ['success', 14_000, undefined],
    ],
  },
  {
    name: 'a long outage adds one error at five minutes',
    steps: [
      ['failure', 10_000, started],
      ['failure', 309_999, quiet(299_999, '4m')],
      ['failure', 310_000, longOutage(300_000, '5m')],
      ['failure', 340_000, quiet(330_000, '5m')],
      ['failure', 900_000, quiet(890_000, '14m')],
      ['success', 922_000, recovered(912_000, '15m')],
    ],
  },
  {
    name: 'the error comes at the first failure past five minutes',
    steps: [
      ['failure', 0, started],
      ['failure', 330_000, longOutage(330_000, '5m')],
      ['success', 360_000, recovered(360_000, '6m')],
    ],
  },
  {
    name: 'a second outage starts over',
    steps: [
      ['failure', 0, started],
      ['failure', 300_000, longOutage(300_000, '5m')],
      ['success', 301_000, recovered(301_000, '5m')],
      ['failure', 400_000, started],
      ['failure', 700_000, longOutage(300_000, '5m')],
    ],
  },
];

describe('outage tracker (Spice: warn when it starts, an error if it lasts five minutes, info when it recovers)', () => {
  it.each(scenarios)('$name', ({ steps }) => {
    const tracker = createOutageTracker({ location: LOCATION });
    for (const [call, nowMs, expected] of steps) {
      const log = call === 'failure' ? tracker.failure(nowMs, CAUSE) : tracker.success(nowMs);
      expect({ call, nowMs, log }).toEqual({ call, nowMs, log: expected });
    }
  });

  it('counts consecutive failures for the backoff', () => {
    const tracker = createOutageTracker({ location: LOCATION });
    tracker.failure(0, CAUSE);
    tracker.failure(1_000, CAUSE);
    expect(tracker.consecutiveFailures).toBe(2);
    tracker.success(3_000);
    expect(tracker.consecutiveFailures).toBe(0);
  });

  it('names a connection failure with the credentials fix, and honours another error threshold', () => {
    const tracker = createOutageTracker({ location: LOCATION, errorAfterMs: 60_000 });
    expect(tracker.failure(0, 'Could not load credentials from any providers.', 'connect')).toEqual({
      level: 'warn',
      message:
        "Failed to connect to the SQS queue in `s3_queue_url` for snapshot location 's3://bucket/snapshots', so datasets with `refresh_mode: snapshot` fall back to checking the location every `refresh_check_interval` until it recovers. " +
        'Cause: Could not load credentials from any providers. Check the AWS credentials for the snapshot location. See: https://spiceai.org/docs/features/data-acceleration/snapshots',
      fields: {},
    });
    expect(tracker.failure(60_000, 'x', 'connect')).toMatchObject({
      level: 'error',
      fields: { outageMs: 60_000 },
    });
  });
});

describe('formatOutageDuration (Spice: whole minutes from one minute, else seconds)', () => {
  it.each([
    [0, '0s'],
    [4_200, '4s'],
    [59_999, '59s'],
    [60_000, '1m'],
    [312_000, '5m'],
  ])('%i ms reads %s', (ms, expected) => {
    expect(formatOutageDuration(ms)).toBe(expected);
  });
});
