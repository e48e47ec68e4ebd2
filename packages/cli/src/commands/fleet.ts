/**
 * `ferry fleet gc --topic ARN`: removes the SQS queues (and their subscriptions) that readers using
 * `ferry_sns_topic_arn` made and left behind when they crashed. A reader refreshes its queue's
 * `ferry:heartbeat-at` tag every `ferry_sns_heartbeat_interval`; a queue whose heartbeat is older
 * than three of those intervals (or `--stale-after`) is abandoned. Live queues, other topics' queues
 * and queues it cannot judge are kept. Run it from cron or a Kubernetes CronJob.
 */
import { parseTopicArn } from '@ferry/core/base';
import type { CollectReport } from '@ferry/store';
import { durationOption, expectPositionals, type Parsed, stringOption } from '../args.js';
import type { CliIo, Command } from '../command.js';
import { UsageError } from '../errors.js';
import { formatTable } from '../table.js';

const HELP = `Usage: ferry fleet gc --topic ARN [options]

Remove the SQS queues that crashed readers made for an SNS topic (snapshots.params.ferry_sns_topic_arn),
with their subscriptions, and subscriptions of the topic whose reader queue no longer exists.
A queue is abandoned when its ferry:heartbeat-at tag is older than 3 of the heartbeat intervals the
reader tagged it with (ferry:heartbeat-interval-seconds), or than --stale-after.

Options:
      --topic ARN             The SNS topic the readers subscribe to (required)
      --stale-after DURATION  Abandoned after this long without a heartbeat (e.g. 10m);
                              default 3 x each queue's own heartbeat interval
      --dry-run               Only print what would be removed
      --json                  Print the report as JSON
      --region REGION         Region of the topic and the queues; default the topic's
      --endpoint URL          SQS and SNS endpoint (a local emulator); default AWS_ENDPOINT_URL_SQS /
                              AWS_ENDPOINT_URL_SNS, then AWS_ENDPOINT_URL, then AWS
  -h, --help                  Show this help

Credentials come from the AWS SDK's chain (environment, profile, instance or pod role). Permissions:
sqs:ListQueues, sqs:ListQueueTags, sqs:GetQueueAttributes, sqs:GetQueueUrl, sqs:DeleteQueue,
sns:ListSubscriptionsByTopic, sns:Unsubscribe.
Exit status: 0 when every removal succeeded, 1 when one failed.
`;

function endpointFor(io: CliIo, service: 'SQS' | 'SNS', flag: string | undefined): string | undefined {
  const value = flag ?? io.env[`AWS_ENDPOINT_URL_${service}`] ?? io.env.AWS_ENDPOINT_URL;
  return value === undefined || value === '' ? undefined : value;
}

function cell(value: string | number | undefined): string {
  return value === undefined || value === '' ? '-' : String(value);
}

function formatReport(report: CollectReport): string {
  const queues =
    report.queues.length === 0
      ? `No reader queues of ${report.topicArn}.\n`
      : formatTable(
          ['QUEUE', 'VERDICT', 'ACTION', 'HOST', 'PID', 'STARTED', 'WHY'],
          report.queues.map((queue) => [
            queue.name,
            queue.verdict,
            queue.action,
            cell(queue.host),
            cell(queue.pid),
            cell(queue.startedAt),
            queue.error === undefined ? queue.reason : `${queue.reason}; ${queue.error}`,
          ]),
        );
  const subscriptions =
    report.subscriptions.length === 0
      ? ''
      : `\n${formatTable(
          ['SUBSCRIPTION', 'QUEUE', 'ACTION', 'WHY'],
          report.subscriptions.map((subscription) => [
            subscription.arn,
            subscription.endpoint.slice(subscription.endpoint.lastIndexOf(':') + 1),
            subscription.action,
            subscription.error === undefined
              ? subscription.reason
              : `${subscription.reason}; ${subscription.error}`,
          ]),
        )}`;
  return queues + subscriptions;
}

async function gc(parsed: Parsed, io: CliIo): Promise<number> {
  const topicText = stringOption(parsed, 'topic');
  if (topicText === undefined)
    throw new UsageError('fleet', 'gc needs --topic ARN (the SNS topic the readers subscribe to)');
  const topic = parseTopicArn(topicText);
  if ('problem' in topic) throw new UsageError('fleet', `--topic ${topic.problem}; ${topic.fix}`);
  const staleAfterMs = durationOption('fleet', parsed, 'stale-after');
  const endpoint = stringOption(parsed, 'endpoint');
  const sqsEndpoint = endpointFor(io, 'SQS', endpoint);
  const snsEndpoint = endpointFor(io, 'SNS', endpoint);
  // Loaded on use, so `ferry --help` starts without the AWS SDK.
  const { collectReaderQueues } = await import('@ferry/store');
  const report = await collectReaderQueues({
    topicArn: topic.arn,
    region: stringOption(parsed, 'region') ?? topic.region,
    ...(sqsEndpoint === undefined ? {} : { sqsEndpoint }),
    ...(snsEndpoint === undefined ? {} : { snsEndpoint }),
    ...(staleAfterMs === undefined ? {} : { staleAfterMs }),
    dryRun: parsed.values['dry-run'] === true,
  });
  io.stdout.write(
    parsed.values.json === true ? `${JSON.stringify(report, null, 2)}\n` : formatReport(report),
  );
  const failed = [...report.queues, ...report.subscriptions].some((entry) => entry.action === 'failed');
  return failed ? 1 : 0;
}

async function run(parsed: Parsed, io: CliIo): Promise<number> {
  const [action] = expectPositionals('fleet', parsed, ['action']);
  if (action !== 'gc') throw new UsageError('fleet', `unknown action '${action}'; the only one is gc`);
  return gc(parsed, io);
}

export const fleetCommand: Command = {
  name: 'fleet',
  positionals: ['action'],
  summary: 'Remove the queues crashed readers left on an SNS topic (fleet gc)',
  help: HELP,
  options: {
    topic: { type: 'string' },
    'stale-after': { type: 'string' },
    'dry-run': { type: 'boolean' },
    json: { type: 'boolean' },
    region: { type: 'string' },
    endpoint: { type: 'string' },
  },
  run,
};
