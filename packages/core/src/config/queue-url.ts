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
  /**
   * The queue's endpoint (its URL's origin) when the SDK would not reach it from the region alone:
   * a FIPS or VPC endpoint host.
   */
  readonly endpoint?: string;
}

/** An AWS region as Spice's `is_aws_region` reads one: lower-case words and digits joined by `-`. */
const REGION = '[a-z][a-z0-9]*(?:-[a-z0-9]+)+';
const QUEUE_NAME = /^[A-Za-z0-9_-]{1,80}$|^[A-Za-z0-9_-]{1,75}\.fifo$/;
/**
 * The SQS hosts of every AWS partition, as Spice's `region_from_sqs_host` reads them (lower-cased):
 * `sqs|sqs-fips.<region>.amazonaws.com`, `sqs.<region>.amazonaws.com.cn`,
 * `sqs.<region>.vpce.amazonaws.com` and `<endpoint id>.sqs.<region>.vpce.amazonaws.com`.
 */
const AWS_SQS_HOSTS: readonly { readonly host: RegExp; readonly ownEndpoint: boolean }[] = [
  { host: new RegExp(`^sqs\\.(${REGION})\\.amazonaws\\.com(?:\\.cn)?$`), ownEndpoint: false },
  { host: new RegExp(`^sqs-fips\\.(${REGION})\\.amazonaws\\.com$`), ownEndpoint: true },
  { host: new RegExp(`^(?:[^.]+\\.)?sqs\\.(${REGION})\\.vpce\\.amazonaws\\.com$`), ownEndpoint: true },
];
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
  const aws = parseAwsQueueUrl(value);
  if (aws !== undefined) return aws;
  if (options.endpointOverride) {
    const local = parseLocalQueueUrl(value);
    if (local !== undefined) return local;
  }
  const form = options.endpointOverride
    ? `${QUEUE_URL_FORM}, or http(s)://<host>/<12-digit account id>/<queue name> with the SQS endpoint override`
    : QUEUE_URL_FORM;
  return { problem: `'${text}' is not an SQS queue URL`, fix: `use ${form}` };
}

/** An https URL of an AWS SQS host whose path is `/<12-digit account>/<queue name>` (trailing `/` dropped). */
function parseAwsQueueUrl(value: string): ParsedQueueUrl | undefined {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return undefined;
  }
  if (url.protocol !== 'https:') return undefined;
  if (url.search !== '' || url.hash !== '' || url.username !== '' || url.password !== '') return undefined;
  const match = /^\/(\d{12})\/([^/]+)\/*$/.exec(url.pathname);
  if (match === null || !QUEUE_NAME.test(match[2] ?? '')) return undefined;
  for (const { host, ownEndpoint } of AWS_SQS_HOSTS) {
    const region = host.exec(url.hostname)?.[1];
    if (region === undefined || region.length > 32) continue;
    return {
      url: value.replace(/\/+$/, ''),
      region,
      ...(ownEndpoint ? { endpoint: url.origin } : {}),
    };
  }
  return undefined;
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
