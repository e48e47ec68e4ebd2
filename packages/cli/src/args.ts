/**
 * Command-line parsing shared by every command: node's `util.parseArgs` in strict mode, with its
 * errors turned into {@link UsageError}s, plus the value parsers (`--http host:port`, choices).
 */
import { type ParseArgsConfig, parseArgs } from 'node:util';
import { parseDuration } from '@ferry/core/base';
import { UsageError } from './errors.js';

export type OptionSpec = NonNullable<ParseArgsConfig['options']>;

export interface Parsed {
  readonly values: Readonly<Record<string, string | boolean | undefined>>;
  readonly positionals: readonly string[];
  readonly help: boolean;
}

/** Parses `argv` for `command` with `options` (a `--help`/`-h` flag is added). */
export function parseCommandLine(command: string, argv: readonly string[], options: OptionSpec): Parsed {
  let parsed: ReturnType<typeof parseArgs>;
  try {
    parsed = parseArgs({
      args: [...argv],
      options: { ...options, help: { type: 'boolean', short: 'h' } },
      allowPositionals: true,
      strict: true,
    });
  } catch (error) {
    throw new UsageError(command, describeParseError(error));
  }
  const values = parsed.values as Record<string, string | boolean | undefined>;
  return { values, positionals: parsed.positionals, help: values.help === true };
}

function describeParseError(error: unknown): string {
  const code = (error as { code?: unknown }).code;
  const message = error instanceof Error ? error.message : String(error);
  const quoted = /'([^']+)'/.exec(message)?.[1];
  if (code === 'ERR_PARSE_ARGS_UNKNOWN_OPTION' && quoted !== undefined) return `unknown option '${quoted}'`;
  if (code === 'ERR_PARSE_ARGS_INVALID_OPTION_VALUE' && quoted !== undefined) {
    return message.includes('argument missing') ? `option '${quoted}' needs a value` : message;
  }
  return message;
}

/** A string option's value, or undefined. */
export function stringOption(parsed: Parsed, name: string): string | undefined {
  const value = parsed.values[name];
  return typeof value === 'string' ? value : undefined;
}

/** A duration option's value (`30s`, `2m`) in milliseconds, or undefined; a bad one is a usage error. */
export function durationOption(command: string, parsed: Parsed, name: string): number | undefined {
  const text = stringOption(parsed, name);
  if (text === undefined) return undefined;
  try {
    return parseDuration(text);
  } catch (error) {
    throw new UsageError(command, `--${name}: ${(error as Error).message}`);
  }
}

/** Exactly `count` positionals named `names`, or a usage error. */
export function expectPositionals(command: string, parsed: Parsed, names: readonly string[]): string[] {
  const got = parsed.positionals;
  if (got.length < names.length) {
    throw new UsageError(
      command,
      `missing ${names
        .slice(got.length)
        .map((n) => `<${n}>`)
        .join(' ')}`,
    );
  }
  if (got.length > names.length) {
    throw new UsageError(command, `unexpected argument '${got[names.length]}'`);
  }
  return [...got];
}

/** At most the `names` positionals a command takes (each command checks for missing ones); else a usage error. */
export function refuseExtraPositionals(command: string, parsed: Parsed, names: readonly string[]): void {
  const extra = parsed.positionals[names.length];
  if (extra !== undefined) throw new UsageError(command, `unexpected argument '${extra}'`);
}

export function choiceOption<T extends string>(
  command: string,
  parsed: Parsed,
  name: string,
  choices: readonly T[],
): T | undefined {
  const value = stringOption(parsed, name);
  if (value === undefined) return undefined;
  if (!choices.includes(value as T)) {
    throw new UsageError(command, `--${name} must be one of ${choices.join(', ')}, got '${value}'`);
  }
  return value as T;
}

export interface ListenAddress {
  readonly host: string;
  readonly port: number;
}

/**
 * `127.0.0.1:8090`, `[::1]:8090`, `localhost:0`, `:8090` (host defaults to 127.0.0.1), or a bare
 * `8090`: the address of `--http` (default) or another listening flag (`--flight`, with its own
 * example). A wrong address says what is wrong with it: its form, a port that is not a number, or a
 * port out of range.
 */
export function parseListenAddress(
  command: string,
  text: string,
  flag: { readonly name: string; readonly example: string } = { name: 'http', example: '127.0.0.1:8090' },
): ListenAddress {
  const match = /^(?:\[([^\]]+)\]|([^:[\]]*)):([^:]*)$/.exec(text) ?? /^()()(\d+)$/.exec(text);
  if (match === null) {
    throw new UsageError(
      command,
      `--${flag.name} must be HOST:PORT, :PORT or PORT (like ${flag.example}), got '${text}'`,
    );
  }
  const portText = match[3] as string;
  if (!/^\d+$/.test(portText)) {
    throw new UsageError(
      command,
      `--${flag.name} '${text}': port '${portText}' is not a number; give a port from 0 to 65535 (like ${flag.example})`,
    );
  }
  const port = Number(portText);
  if (port > 65_535) {
    throw new UsageError(
      command,
      `--${flag.name} '${text}': port ${portText} is out of range; give a port from 0 to 65535 (0 picks a free one)`,
    );
  }
  const host = match[1] || match[2] || '127.0.0.1';
  return { host, port };
}

/** The base URL of a server at `--http` (a `host:port` or an `http(s)://` URL). */
export function serverUrl(command: string, text: string): string {
  if (/^https?:\/\//i.test(text)) return text.replace(/\/+$/, '');
  const { host, port } = parseListenAddress(command, text);
  const urlHost = host.includes(':') ? `[${host}]` : host === '0.0.0.0' ? '127.0.0.1' : host;
  return `http://${urlHost}:${port}`;
}
