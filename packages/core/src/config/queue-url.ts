/**
 * SQS queue URLs for `snapshots.params.s3_queue_url`. Amazon's form is
 * `https://sqs.<region>.amazonaws.com/<12-digit account>/<name>`; when an SQS endpoint override is
 * configured (a local server such as fauxqs), any http(s) URL whose path is `/<account>/<name>`
 * is accepted too.
 */

export interface ParsedQueueUrl {
  readonly url: string;
  /** The region named by the host (`sqs.<region>.…`), when it names one. */
  readonly region?: string;
}

const REGION = '[a-z]{2}(?:-[a-z]+)+-\\d+';
const QUEUE_NAME = /^[A-Za-z0-9_-]{1,80}$|^[A-Za-z0-9_-]{1,75}\.fifo$/;
const AWS_QUEUE_URL = new RegExp(`^https://sqs\\.(${REGION})\\.amazonaws\\.com/(\\d{12})/([^/]+)$`);
const ARN = new RegExp(`^arn:aws[a-z-]*:sqs:(${REGION}):(\\d{12}):([^:/]+)$`);
const LOCAL_HOST_REGION = new RegExp(`^sqs\\.(${REGION})\\.`);

export const QUEUE_URL_FORM = 'https://sqs.<region>.amazonaws.com/<12-digit account id>/<queue name>';

/**
 * The queue URL and its region, or a clause saying what is wrong (`is empty`, `… is an ARN`, …)
 * that a caller completes with the consequence and the fix.
 */
export function parseQueueUrl(
  text: string,
  options: { readonly endpointOverride: boolean },
): ParsedQueueUrl | { readonly problem: string; readonly fix: string } {
  const value = text.trim();
  if (value === '')
    return { problem: 'is empty', fix: `set it to the queue URL (${QUEUE_URL_FORM}) or remove it` };
  const arn = ARN.exec(value);
  if (arn !== null || value.toLowerCase().startsWith('arn:')) {
    const fix =
      arn === null
        ? `use the queue URL instead (${QUEUE_URL_FORM})`
        : `use the queue URL instead: https://sqs.${arn[1]}.amazonaws.com/${arn[2]}/${arn[3]}`;
    return { problem: `'${text}' is an ARN`, fix };
  }
  const aws = AWS_QUEUE_URL.exec(value);
  if (aws !== null && QUEUE_NAME.test(aws[3] ?? '')) {
    return aws[1] === undefined ? { url: value } : { url: value, region: aws[1] };
  }
  if (options.endpointOverride) {
    const local = parseLocalQueueUrl(value);
    if (local !== undefined) return local;
  }
  const form = options.endpointOverride
    ? `${QUEUE_URL_FORM}, or http(s)://<host>/<12-digit account id>/<queue name> with the SQS endpoint override`
    : QUEUE_URL_FORM;
  return { problem: `'${text}' is not an SQS queue URL`, fix: `use ${form}` };
}

function parseLocalQueueUrl(value: string): ParsedQueueUrl | undefined {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return undefined;
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return undefined;
  if (url.search !== '' || url.hash !== '' || url.username !== '' || url.password !== '') return undefined;
  const match = /^\/(\d{12})\/([^/]+)$/.exec(url.pathname);
  if (match === null || !QUEUE_NAME.test(match[2] ?? '')) return undefined;
  const region = LOCAL_HOST_REGION.exec(url.hostname)?.[1];
  return region === undefined ? { url: value } : { url: value, region };
}

/** An http(s) endpoint URL (`s3_endpoint`, `s3_queue_endpoint`, `AWS_ENDPOINT_URL_SQS`), or `undefined`. */
export function parseEndpoint(text: string): { readonly url: string; readonly http: boolean } | undefined {
  let url: URL;
  try {
    url = new URL(text.trim());
  } catch {
    return undefined;
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return undefined;
  if (url.hostname === '' || url.search !== '' || url.hash !== '') return undefined;
  return { url: text.trim(), http: url.protocol === 'http:' };
}
