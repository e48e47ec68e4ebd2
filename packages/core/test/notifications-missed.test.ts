import { describe, expect, it } from 'vitest';
import {
  announcedCommits,
  createMissedCommitDetector,
  type MissedCommitDetector,
  MissedCommitLogMessage,
  normalizeEtag,
  parseNotification,
} from '../src/notifications/index.js';

const LOCATION = 's3://b/snapshots';
const GRACE = 60_000;

function detector(): MissedCommitDetector {
  return createMissedCommitDetector({ location: LOCATION, queueKey: 's3_queue_url', graceMs: GRACE });
}

/**
 * A scripted timeline on a simulated clock: `commit` writes a new document, `read` is a read of it
 * (a poll or a notification's read), `notify` delivers the commit's event to THIS process.
 */
class Timeline {
  now = 0;
  version = 0;
  readonly warnings: string[] = [];
  /** Each commit checked, in settling order. */
  readonly settled: ('missed' | 'notified')[] = [];

  constructor(readonly d: MissedCommitDetector) {}

  etag(version = this.version): string {
    return `"etag-${version}"`;
  }

  at(ms: number): this {
    this.now = ms;
    for (const line of this.d.check(ms)) {
      if (line.level === 'warn') this.warnings.push(line.message);
      else this.settled.push(line.message === MissedCommitLogMessage.missed ? 'missed' : 'notified');
    }
    return this;
  }

  commit(): number {
    this.version += 1;
    return this.version;
  }

  read(version = this.version): this {
    this.d.observed(this.etag(version), this.now, this.now);
    return this;
  }

  notify(version: number): this {
    // S3 events carry the ETag bare; reads return it quoted.
    this.d.announced(`etag-${version}`, this.now);
    return this;
  }
}

function started(): Timeline {
  const t = new Timeline(detector());
  t.read(); // the document current at startup, read before the queue is read
  t.d.listening(1_000);
  t.at(2_000).read(); // the first read while listening: the baseline
  return t;
}

describe('the missed-commit detector', () => {
  it('a healthy queue: every commit notified (before or after the poll that sees it) — no warning', () => {
    const t = started();
    for (let n = 0; n < 30; n++) {
      const version = t.commit();
      const base = 10_000 + n * 20_000;
      if (n % 2 === 0)
        t.at(base).notify(version).read(); // the notification first
      else
        t.at(base)
          .read()
          .at(base + 5_000)
          .notify(version); // the poll first, the event 5 s later
    }
    t.at(10_000_000);
    expect(t.warnings).toStrictEqual([]);
    expect(t.settled).toStrictEqual(Array(30).fill('notified'));
  });

  it('a shared queue: commits seen by polls whose events went elsewhere — one warning', () => {
    const t = started();
    for (let n = 0; n < 6; n++) {
      const version = t.commit();
      const base = 10_000 + n * 100_000;
      t.at(base).read();
      if (n % 2 === 0) t.at(base + 1_000).notify(version);
    }
    t.at(10_000_000);
    expect(t.warnings).toStrictEqual([
      "Snapshot location 's3://b/snapshots' saw 2 of its last 4 metadata.json commits without receiving their S3 event notifications within 1m on the SQS queue in `s3_queue_url`. Another process probably reads the same queue: SQS delivers each message to one receiver, so readers that share a queue each see only some notifications. Give each reader process its own queue subscribed to the bucket notifications' SNS topic (or set `snapshots.params.ferry_sns_topic_arn` and let each reader make its own), or check that every notification reaches the queue. Datasets still reload every `refresh_check_interval`.",
    ]);
  });

  it('one miss is not enough', () => {
    const t = started();
    t.commit();
    t.at(10_000).read();
    for (let n = 0; n < 5; n++) {
      const version = t.commit();
      t.at(100_000 + n * 100_000)
        .read()
        .notify(version);
    }
    t.at(10_000_000);
    expect(t.warnings).toStrictEqual([]);
  });

  it('does not count the document current at startup, nor a change whose predecessor was read before listening', () => {
    const t = new Timeline(detector());
    t.read(); // startup read, before listening
    t.commit();
    t.at(500).read(); // still before listening
    t.d.listening(1_000);
    t.commit();
    t.at(2_000).read(); // its predecessor was read before listening: a commit maybe made before the queue was read
    t.commit();
    t.at(3_000).read();
    t.commit();
    t.at(4_000).read();
    t.at(1_000_000);
    // Only the last two could be checked: exactly two misses.
    expect(t.warnings).toHaveLength(1);
    expect(t.warnings[0]).toContain('saw 2 of its last 2 metadata.json commits');
  });

  it('a receive failure drops pending checks; checks restart from a new baseline after recovery', () => {
    const t = started();
    t.commit();
    t.at(10_000).read();
    t.commit();
    t.at(20_000).read();
    t.d.interrupted(); // the queue is unreachable: the two events wait on the queue
    t.commit();
    t.at(30_000).read(); // seen during the outage: not checked
    t.at(200_000);
    t.d.listening(200_000);
    t.notify(1).notify(2).notify(3); // the backlog arrives late
    t.commit();
    t.at(210_000).read(); // its predecessor (3) was read before listening again: not checked
    t.at(1_000_000);
    expect(t.warnings).toStrictEqual([]);
  });

  it('a late event retracts its miss; the warning comes again only after a clean window', () => {
    const t = started();
    const one = t.commit();
    t.at(10_000).read();
    const two = t.commit();
    t.at(20_000).read();
    t.at(GRACE + 15_000); // the first is a miss; the second is still within its grace
    t.at(GRACE + 16_000).notify(one);
    t.at(GRACE + 25_000); // the second is a miss: one miss in the window, no warning
    expect(t.warnings).toStrictEqual([]);
    t.notify(two);
    for (let n = 0; n < 2; n++) {
      t.commit();
      t.at(200_000 + n * 10_000).read();
    }
    t.at(400_000);
    expect(t.warnings).toHaveLength(1);
    t.at(500_000);
    expect(t.warnings).toHaveLength(1); // once per episode
  });

  it('re-reading the same document and reading an already settled one changes nothing', () => {
    const t = started();
    const version = t.commit();
    t.at(10_000)
      .notify(version)
      .read()
      .read()
      .read(version - 1)
      .read(version);
    t.at(1_000_000);
    expect(t.warnings).toStrictEqual([]);
  });
});

describe('announcedCommits and ETags', () => {
  const location = { bucket: 'b', prefix: 'snapshots/' };
  const record = (key: string, eTag?: string, eventName = 'ObjectCreated:Put') => ({
    eventSource: 'aws:s3',
    eventName,
    s3: { bucket: { name: 'b' }, object: { key, ...(eTag === undefined ? {} : { eTag }) } },
  });
  const recordsOf = (body: unknown) => {
    const parsed = parseNotification(JSON.stringify(body));
    if (parsed.kind !== 'records') throw new Error(`not records: ${parsed.kind}`);
    return parsed.records;
  };

  it('names the ETags of the location metadata.json creations only', () => {
    const records = recordsOf({
      Records: [
        record('snapshots/metadata.json', 'ABC'),
        record('snapshots/month=1/x.duckdb', 'def'),
        record('snapshots/metadata.json', 'gone', 'ObjectRemoved:Delete'),
      ],
    });
    expect(announcedCommits(records, location)).toStrictEqual({ etags: ['abc'], unnamed: false });
  });

  it('says when a commit named no ETag, and is undefined without a commit', () => {
    expect(
      announcedCommits(recordsOf({ Records: [record('snapshots/metadata.json')] }), location),
    ).toStrictEqual({ etags: [], unnamed: true });
    expect(
      announcedCommits(recordsOf({ Records: [record('snapshots/a.duckdb', 'x')] }), location),
    ).toBeUndefined();
  });

  it('reads the EventBridge etag', () => {
    const records = recordsOf({
      'detail-type': 'Object Created',
      source: 'aws.s3',
      detail: { bucket: { name: 'b' }, object: { key: 'snapshots/metadata.json', etag: 'e1' } },
    });
    expect(announcedCommits(records, location)).toStrictEqual({ etags: ['e1'], unnamed: false });
  });

  it.each([
    ['"abc"', 'abc'],
    ['W/"abc"', 'abc'],
    ['ABC-2', 'abc-2'],
    [' abc ', 'abc'],
  ])('normalizeEtag(%s) = %s', (raw, expected) => {
    expect(normalizeEtag(raw)).toBe(expected);
  });
});
