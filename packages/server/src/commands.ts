/**
 * Dataset commands from HTTP (`POST /v1/datasets/:name/commands` and the inspector's
 * `POST /inspector/datasets/:name/commands`): the body `{ "command": "poll.now" |
 * "polling.pause" | "polling.resume" }`, as JSON whatever its content type says, sent to the
 * dataset's machine. Both routes answer 202 `{ dataset, command, accepted: true }`.
 */
import { DATASET_COMMANDS, type DatasetCommand, type Runtime } from '@ferry/runtime';
import { BadRequestError, InvalidCommandError } from './errors.js';

export { DATASET_COMMANDS };

export interface CommandAccepted {
  readonly dataset: string;
  readonly command: DatasetCommand;
  readonly accepted: true;
}

/** The command a request body (raw text or bytes, none, or JSON a parser already read) names. */
export function parseCommand(dataset: string, body: unknown): DatasetCommand {
  let value = body;
  if (body === undefined || typeof body === 'string' || Buffer.isBuffer(body)) {
    try {
      value = JSON.parse((body ?? '').toString());
    } catch (error) {
      throw new BadRequestError(
        `The command body for dataset '${dataset}' is not valid JSON; send { "command": "poll.now" }.`,
        { cause: error },
      );
    }
  }
  const command = (value as { command?: unknown } | null | undefined)?.command;
  if (!DATASET_COMMANDS.includes(command as DatasetCommand)) throw new InvalidCommandError(dataset, command);
  return command as DatasetCommand;
}

/** Sends the body's command to the dataset; the 202 body. */
export async function runCommand(runtime: Runtime, dataset: string, body: unknown): Promise<CommandAccepted> {
  const command = parseCommand(dataset, body);
  await runtime.send(dataset, command);
  return { dataset, command, accepted: true };
}
