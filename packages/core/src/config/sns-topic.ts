/**
 * SNS topic ARNs for `snapshots.params.ferry_sns_topic_arn`, Ferry's own setting (Spice has no such
 * key): instead of reading a queue someone made, each reader process makes its own SQS queue and
 * subscribes it to the topic the bucket's notifications go to. The ARN names the region (where the
 * queue is made) and must fit in an SQS tag value, since the queue is tagged with it.
 */

export interface ParsedTopicArn {
  readonly arn: string;
  readonly partition: string;
  readonly region: string;
  readonly account: string;
  readonly name: string;
}

export const TOPIC_ARN_FORM = 'arn:aws:sns:<region>:<12-digit account id>:<topic name>';

/** The longest SQS tag value; the reader's queue carries the topic ARN in one. */
export const MAX_TAG_VALUE_LENGTH = 256;

const TOPIC_ARN = /^arn:(aws[a-z-]*):sns:([a-z]{2}(?:-[a-z]+)+-\d+):(\d{12}):([^:/\s]+)$/;
const TOPIC_NAME = /^[A-Za-z0-9_-]{1,256}$/;

/**
 * The topic and its region, or a clause saying what is wrong that a caller completes with the
 * consequence, plus the fix.
 */
export function parseTopicArn(
  text: string,
): ParsedTopicArn | { readonly problem: string; readonly fix: string } {
  const value = text.trim();
  if (value === '')
    return { problem: 'is empty', fix: `set it to the topic's ARN (${TOPIC_ARN_FORM}) or remove it` };
  if (/^https?:\/\//i.test(value)) {
    return {
      problem: `'${text}' is a URL, not an SNS topic ARN`,
      fix: `use the topic's ARN (${TOPIC_ARN_FORM}); a queue URL belongs in s3_queue_url`,
    };
  }
  const match = TOPIC_ARN.exec(value);
  if (match === null) {
    return { problem: `'${text}' is not an SNS topic ARN`, fix: `use ${TOPIC_ARN_FORM}` };
  }
  const [, partition = '', region = '', account = '', name = ''] = match;
  if (name.endsWith('.fifo')) {
    return {
      problem: `'${text}' is a FIFO topic, which S3 event notifications cannot publish to`,
      fix: 'use a standard SNS topic',
    };
  }
  if (!TOPIC_NAME.test(name)) {
    return {
      problem: `'${text}' has an invalid topic name`,
      fix: 'a topic name is 1 to 256 letters, digits, hyphens and underscores',
    };
  }
  if (value.length > MAX_TAG_VALUE_LENGTH) {
    return {
      problem: `'${text}' is ${value.length} characters long, more than the ${MAX_TAG_VALUE_LENGTH} an SQS tag can hold (each reader's queue is tagged with its topic)`,
      fix: 'use a topic with a shorter name',
    };
  }
  return { arn: value, partition, region, account, name };
}
