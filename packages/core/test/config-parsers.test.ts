import { describe, expect, it } from 'vitest';
import { closest, parseDuration, parseQueueUrl } from '../src/config/index.js';
import { FerryError } from '../src/errors.js';

describe('parseDuration', () => {
  it.each([
    ['500ms', 500],
    ['30s', 30_000],
    ['1m', 60_000],
    ['10m', 600_000],
    ['1h', 3_600_000],
    ['1d', 86_400_000],
    ['1h30m', 5_400_000],
    ['1m30s', 90_000],
    ['1.5s', 1_500],
    [' 45s ', 45_000],
    ['24d', 2_073_600_000],
  ])('%s → %i ms', (text, ms) => {
    expect(parseDuration(text)).toBe(ms);
  });

  it.each([
    ['', "'' is not a duration; use a number with a unit (ms, s, m, h or d), such as 30s"],
    ['soon', "'soon' is not a duration; use a number with a unit (ms, s, m, h or d), such as 30s"],
    ['30', "'30' is not a duration; use a number with a unit (ms, s, m, h or d), such as 30s"],
    ['5 s', "'5 s' is not a duration; use a number with a unit (ms, s, m, h or d), such as 30s"],
    ['1y', "'1y' is not a duration; use a number with a unit (ms, s, m, h or d), such as 30s"],
    ['s', "'s' is not a duration; use a number with a unit (ms, s, m, h or d), such as 30s"],
    ['0s', "'0s' is zero; use a positive duration such as 30s"],
    ['0.1ms', "'0.1ms' is zero; use a positive duration such as 30s"],
    ['-5s', "'-5s' is negative; use a positive duration such as 30s"],
    ['25d', "'25d' is longer than 24d; use at most 24d"],
  ])('%j is refused', (text, problem) => {
    let thrown: unknown;
    try {
      parseDuration(text);
    } catch (error) {
      thrown = error;
    }
    expect(thrown).toBeInstanceOf(FerryError);
    expect(thrown).toMatchObject({ code: 'ERR_INVALID_DURATION', message: `Invalid duration: ${problem}.` });
  });
});

describe('parseQueueUrl', () => {
  const aws = { endpointOverride: false };
  const local = { endpointOverride: true };

  it.each([
    ['https://sqs.us-east-1.amazonaws.com/123456789012/replica', 'us-east-1'],
    ['https://sqs.us-gov-west-1.amazonaws.com/123456789012/replica', 'us-gov-west-1'],
    ['https://sqs.ap-southeast-2.amazonaws.com/123456789012/a_b-C.fifo', 'ap-southeast-2'],
    [`https://sqs.eu-west-1.amazonaws.com/123456789012/${'q'.repeat(80)}`, 'eu-west-1'],
    [`https://sqs.eu-west-1.amazonaws.com/123456789012/${'q'.repeat(75)}.fifo`, 'eu-west-1'],
  ])('accepts %s', (url, region) => {
    expect(parseQueueUrl(url, aws)).toStrictEqual({ url, region });
  });

  // Spice's queue_url.rs (is_sqs_queue_url, region_from_sqs_host) accepts every AWS partition's SQS
  // host, read case-insensitively, and a path with trailing slashes.
  it.each([
    ['https://sqs.cn-north-1.amazonaws.com.cn/123456789012/replica', 'cn-north-1', undefined],
    ['https://SQS.EU-WEST-1.AMAZONAWS.COM/123456789012/replica', 'eu-west-1', undefined],
    ['https://sqs.eusc-de-east-1.amazonaws.com/123456789012/replica', 'eusc-de-east-1', undefined],
    [
      'https://sqs-fips.us-east-1.amazonaws.com/123456789012/replica',
      'us-east-1',
      'https://sqs-fips.us-east-1.amazonaws.com',
    ],
    [
      'https://sqs.us-west-2.vpce.amazonaws.com/123456789012/replica',
      'us-west-2',
      'https://sqs.us-west-2.vpce.amazonaws.com',
    ],
    [
      'https://vpce-0a1b2c-3d4e.sqs.us-west-2.vpce.amazonaws.com/123456789012/replica',
      'us-west-2',
      'https://vpce-0a1b2c-3d4e.sqs.us-west-2.vpce.amazonaws.com',
    ],
  ])('accepts %s, as Spice does (region %s, endpoint %s)', (url, region, endpoint) => {
    expect(parseQueueUrl(url, aws)).toStrictEqual({
      url,
      region,
      ...(endpoint === undefined ? {} : { endpoint }),
    });
  });

  it('a trailing slash is dropped, as Spice drops it', () => {
    const url = 'https://sqs.us-east-1.amazonaws.com/123456789012/replica';
    expect(parseQueueUrl(`${url}//`, aws)).toStrictEqual({ url, region: 'us-east-1' });
  });

  it.each([
    'http://sqs.us-east-1.amazonaws.com/123456789012/replica',
    'https://sqs.us-east-1.amazonaws.com/123456789012/replica?x=1',
    'https://user@sqs.us-east-1.amazonaws.com/123456789012/replica',
    'https://sqs.us-east-1.amazonaws.com.evil.example/123456789012/replica',
    'https://sqs.not_a_region.amazonaws.com/123456789012/replica',
    'https://a.b.sqs.us-east-1.vpce.amazonaws.com/123456789012/replica',
    'https://sqs.us-east-1.amazonaws.com/123456789012/re.plica',
    `https://sqs.eu-west-1.amazonaws.com/123456789012/${'q'.repeat(76)}.fifo`,
    'https://sqs.amazonaws.com/123456789012/replica',
    'sqs://replica',
  ])('refuses %s without an override', (url) => {
    expect(parseQueueUrl(url, aws)).toStrictEqual({
      problem: `'${url}' is not an SQS queue URL`,
      fix: 'use https://sqs.<region>.amazonaws.com/<12-digit account id>/<queue name>',
    });
  });

  it('with an override: any http(s) URL whose path is /<account>/<name>', () => {
    expect(parseQueueUrl('http://sqs.us-east-1.localhost:4566/000000000000/q', local)).toStrictEqual({
      url: 'http://sqs.us-east-1.localhost:4566/000000000000/q',
      region: 'us-east-1',
    });
    expect(parseQueueUrl('http://127.0.0.1:9324/000000000000/q', local)).toStrictEqual({
      url: 'http://127.0.0.1:9324/000000000000/q',
    });
    expect(parseQueueUrl('http://127.0.0.1:9324/queue/q', local)).toStrictEqual({
      problem: "'http://127.0.0.1:9324/queue/q' is not an SQS queue URL",
      fix: 'use https://sqs.<region>.amazonaws.com/<12-digit account id>/<queue name>, or http(s)://<host>/<12-digit account id>/<queue name> with the SQS endpoint override',
    });
  });

  it('an ARN names the URL to use', () => {
    expect(parseQueueUrl('arn:aws:sqs:eu-west-1:123456789012:replica', aws)).toStrictEqual({
      problem: "'arn:aws:sqs:eu-west-1:123456789012:replica' is an ARN",
      fix: 'use the queue URL instead: https://sqs.eu-west-1.amazonaws.com/123456789012/replica',
    });
    expect(parseQueueUrl('arn:aws:sns:eu-west-1:123456789012:topic', aws)).toStrictEqual({
      problem: "'arn:aws:sns:eu-west-1:123456789012:topic' is an ARN",
      fix: 'use the queue URL instead (https://sqs.<region>.amazonaws.com/<12-digit account id>/<queue name>)',
    });
  });
});

describe('closest (did you mean)', () => {
  const keys = ['refresh_mode', 'refresh_check_interval', 'engine', 'mode', 'bootstrap_on_failure_behavior'];
  it.each([
    ['refresh_mod', 'refresh_mode'],
    ['refresh_check_intervall', 'refresh_check_interval'],
    ['egnine', 'engine'],
    ['Engine', 'engine'],
    ['bootstrap_on_failure', 'bootstrap_on_failure_behavior'],
    ['colour', undefined],
    ['x', undefined],
  ])('%s → %s', (word, expected) => {
    expect(closest(word, keys)).toBe(expected);
  });
});
