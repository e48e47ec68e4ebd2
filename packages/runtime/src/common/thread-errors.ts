/**
 * The runtime errors a thread's own plumbing raises (a channel whose other end went away, a thread
 * file missing or built from other sources). Apart from `errors.ts`, which re-exports the error
 * classes of every package below the runtime: a dataset thread loads this module, and none of those.
 */
import { FerryError, registerErrors } from '@ferry/core/common';

/** The other end of a thread channel went away while requests were pending. */
export class ChannelClosedError extends FerryError {
  constructor(what: string, reason: string) {
    super('ERR_THREAD_EXITED', `${what} ${reason} before answering; the request was not completed.`);
    this.name = 'ChannelClosedError';
  }
}

export class ThreadFileMissingError extends FerryError {
  constructor(file: string) {
    super(
      'ERR_THREAD_FILE_MISSING',
      `Thread entry ${file} was not found; build the runtime package first (pnpm build).`,
    );
    this.name = 'ThreadFileMissingError';
  }
}

/** A thread would start from a `dist/` built from other sources than the ones running the host. */
export class StaleBuildError extends FerryError {
  readonly file: string;

  constructor(file: string, source: string) {
    super(
      'ERR_STALE_BUILD',
      `Thread code ${file} was built from another version of ${source} than the one running now; run \`pnpm run build\` and start again.`,
    );
    this.name = 'StaleBuildError';
    this.file = file;
  }
}

registerErrors({ ChannelClosedError, ThreadFileMissingError, StaleBuildError });
