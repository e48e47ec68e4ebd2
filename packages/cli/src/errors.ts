/**
 * Errors of the `ferry` command. A {@link UsageError} (bad command line) exits with 2 and points at
 * `--help`; every other error exits with 1 after its one-sentence message.
 */
import { FerryError, type FerryErrorOptions, registerErrors } from '@ferry/core/base';

/** The command line is wrong: unknown command or flag, missing or extra argument, bad value. */
export class UsageError extends FerryError {
  /** The command whose `--help` explains the fix; undefined for the top level. */
  readonly command: string | undefined;

  constructor(command: string | undefined, message: string) {
    super('ERR_USAGE', message);
    this.name = 'UsageError';
    this.command = command;
  }
}

/** `--api-key-env NAME` names a variable that is unset or empty. */
export class ApiKeyEnvError extends FerryError {
  constructor(name: string) {
    super(
      'ERR_API_KEY_ENV',
      `Environment variable ${name} (named by --api-key-env) is not set or empty; export the API key in it or drop --api-key-env.`,
    );
    this.name = 'ApiKeyEnvError';
  }
}

/** A key file of `ferry keygen` or `ferry publish --signing-key` cannot be written or read. */
export class KeyFileError extends FerryError {
  readonly file: string;

  constructor(file: string, problem: string, options: FerryErrorOptions = {}) {
    super(
      'ERR_KEY_FILE',
      `Key file '${file}' ${problem}; give another path or fix its permissions.`,
      options,
    );
    this.name = 'KeyFileError';
    this.file = file;
  }
}

/** The spicepod file given to a command cannot be read; the message says why (the cause's). */
export class SpicepodReadError extends FerryError {
  constructor(file: string, options: FerryErrorOptions = {}) {
    const why = options.cause instanceof Error ? ` (${options.cause.message})` : '';
    super(
      'ERR_SPICEPOD_READ',
      `Cannot read spicepod '${file}'${why}; pass the path of a spicepod.yaml.`,
      options,
    );
    this.name = 'SpicepodReadError';
  }
}

/** `ferry serve` could not bind its HTTP address. */
export class ListenError extends FerryError {
  /** `flag`: the option that sets the address (`http` by default, `flight`). */
  constructor(address: string, reason: string, options: FerryErrorOptions & { readonly flag?: string } = {}) {
    super(
      'ERR_LISTEN',
      `Cannot listen on ${address} (${reason}); choose another address with --${options.flag ?? 'http'}.`,
      options,
    );
    this.name = 'ListenError';
  }
}

/** `ferry status` could not reach the server, or the server refused the request. */
export class ServerRequestError extends FerryError {
  constructor(url: string, reason: string, options: FerryErrorOptions = {}) {
    super(
      'ERR_SERVER_REQUEST',
      `Request to ${url} failed: ${reason.replace(/\.$/, '')}; check that 'ferry serve' runs there (--http) and the API key (--api-key-env).`,
      options,
    );
    this.name = 'ServerRequestError';
  }
}

registerErrors({
  UsageError,
  ApiKeyEnvError,
  KeyFileError,
  SpicepodReadError,
  ListenError,
  ServerRequestError,
});
