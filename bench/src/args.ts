/** The command line: `pnpm bench [scenario…] [--quick] [--minutes N]`. */
import { parseArgs as parseOptions } from 'node:util';

export const SCENARIO_IDS = [
  'b1',
  'b2',
  'b3',
  'b4',
  'b5',
  'b6',
  'b7',
  'b8',
  'b9',
  'b10',
  'b11',
  'b12',
  'b13',
  'b14',
  'b15',
  'b16',
  'b17',
  'b18',
  'b19',
  'soak',
] as const;
export type ScenarioId = (typeof SCENARIO_IDS)[number];

const ALIASES: Readonly<Record<string, ScenarioId>> = {
  b1: 'b1',
  query: 'b1',
  b2: 'b2',
  swap: 'b2',
  b3: 'b3',
  freshness: 'b3',
  b4: 'b4',
  download: 'b4',
  b5: 'b5',
  scale: 'b5',
  b6: 'b6',
  flight: 'b6',
  b7: 'b7',
  fleet: 'b7',
  b8: 'b8',
  join: 'b8',
  b9: 'b9',
  http: 'b9',
  b10: 'b10',
  inspector: 'b10',
  b11: 'b11',
  cache: 'b11',
  b12: 'b12',
  delta: 'b12',
  b13: 'b13',
  signing: 'b13',
  b14: 'b14',
  cancel: 'b14',
  b15: 'b15',
  overload: 'b15',
  b16: 'b16',
  pinned: 'b16',
  b17: 'b17',
  builders: 'b17',
  b18: 'b18',
  pipelines: 'b18',
  b19: 'b19',
  start: 'b19',
  soak: 'soak',
};

export interface BenchArgs {
  /** `--help` / `-h`: print the usage and run nothing. */
  readonly help: boolean;
  readonly scenarios: readonly ScenarioId[];
  readonly quick: boolean;
  readonly minutes: number | undefined;
}

export const USAGE =
  'usage: pnpm bench [b1|query b2|swap b3|freshness b4|download b5|scale b6|flight b7|fleet b8|join b9|http b10|inspector b11|cache b12|delta b13|signing b14|cancel b15|overload b16|pinned b17|builders b18|pipelines b19|start soak …] [--quick] [--minutes N]\n' +
  'Without a scenario every scenario but soak runs; soak runs only when named (default 10 minutes).';

export function parseArgs(argv: readonly string[]): BenchArgs {
  const scenarios: ScenarioId[] = [];
  let quick = false;
  let help = false;
  let minutes: number | undefined;
  for (let index = 0; index < argv.length; index++) {
    const arg = argv[index] ?? '';
    if (arg === '--') continue;
    if (arg === '--quick') quick = true;
    else if (arg === '--minutes' || arg.startsWith('--minutes=')) {
      const text = arg.includes('=') ? arg.slice(arg.indexOf('=') + 1) : argv[++index];
      const value = Number(text);
      if (text === undefined || !Number.isFinite(value) || value <= 0) {
        throw new Error(`--minutes needs a positive number of minutes, got '${text ?? ''}'.\n${USAGE}`);
      }
      minutes = value;
    } else if (arg === '--help' || arg === '-h') help = true;
    else if (arg.startsWith('-')) throw new Error(`Unknown option '${arg}'.\n${USAGE}`);
    else {
      const id = ALIASES[arg.toLowerCase()];
      if (id === undefined) throw new Error(`Unknown scenario '${arg}'.\n${USAGE}`);
      if (!scenarios.includes(id)) scenarios.push(id);
    }
  }
  const chosen = scenarios.length > 0 ? scenarios : SCENARIO_IDS.filter((id) => id !== 'soak');
  if (!help && minutes !== undefined && !chosen.includes('soak')) {
    throw new Error(
      `--minutes sets the soak's length; name soak to run it (pnpm bench soak --minutes ${minutes}).\n${USAGE}`,
    );
  }
  return { help, scenarios: chosen, quick, minutes };
}

/** A measuring tool's usage line: `usage: node bench/dist/<tool>.js [--name default] …`. */
export function toolUsage(tool: string, defaults: Readonly<Record<string, number>>): string {
  const options = Object.entries(defaults).map(([name, value]) => `[--${name} ${value}]`);
  return `usage: node bench/dist/${tool}.js ${options.join(' ')}`;
}

/**
 * A measuring tool's (cpu-split.js, gc-split.js, duckdb-calls.js) whole-number options, as
 * `--name N` from `argv`: each at least 1, its default when not given; `help` for `--help` / `-h`.
 * A bad argument is an Error naming it, then the usage.
 */
export function readToolOptions<K extends string>(
  tool: string,
  argv: readonly string[],
  defaults: Readonly<Record<K, number>>,
): { readonly help: boolean; readonly values: Record<K, number> } {
  const names = Object.keys(defaults) as K[];
  const usage = toolUsage(tool, defaults);
  let values: Record<string, string | boolean | undefined>;
  try {
    values = parseOptions({
      args: [...argv],
      options: {
        ...Object.fromEntries(
          names.map((name) => [name, { type: 'string', default: String(defaults[name]) }] as const),
        ),
        help: { type: 'boolean', short: 'h' },
      },
    }).values;
  } catch (error) {
    const code = (error as { code?: string }).code;
    const arg = /'([^']*)'/.exec((error as Error).message)?.[1] ?? '';
    if (code === 'ERR_PARSE_ARGS_UNKNOWN_OPTION') throw new Error(`Unknown option '${arg}'.\n${usage}`);
    if (code === 'ERR_PARSE_ARGS_UNEXPECTED_POSITIONAL')
      throw new Error(`Unexpected argument '${arg}'.\n${usage}`);
    throw new Error(`${(error as Error).message}\n${usage}`);
  }
  const chosen = {} as Record<K, number>;
  for (const name of names) {
    const text = values[name];
    const value = Number(text);
    if (!Number.isInteger(value) || value < 1) {
      throw new Error(`--${name} wants a whole number of at least 1, not ${text}.\n${usage}`);
    }
    chosen[name] = value;
  }
  return { help: values.help === true, values: chosen };
}

/**
 * {@link readToolOptions} for a tool's main module: `--help` prints the usage and ends the process
 * (exit code 0); a bad argument prints what is wrong and the usage, and ends it with exit code 2.
 */
export function toolOptions<K extends string>(
  tool: string,
  argv: readonly string[],
  defaults: Readonly<Record<K, number>>,
): Record<K, number> {
  try {
    const { help, values } = readToolOptions(tool, argv, defaults);
    if (!help) return values;
    process.stdout.write(`${toolUsage(tool, defaults)}\n`);
    process.exit(0);
  } catch (error) {
    process.stderr.write(`${(error as Error).message}\n`);
    process.exit(2);
  }
}
