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

/**
 * A measuring tool's (cpu-split.js, gc-split.js, duckdb-calls.js) whole-number options, as
 * `--name N` from `argv`: each at least 1, its default when not given, or a thrown error naming it.
 */
export function toolOptions<K extends string>(
  argv: readonly string[],
  defaults: Readonly<Record<K, number>>,
): Record<K, number> {
  const names = Object.keys(defaults) as K[];
  const { values } = parseOptions({
    args: [...argv],
    options: Object.fromEntries(
      names.map((name) => [name, { type: 'string', default: String(defaults[name]) }] as const),
    ),
  });
  const chosen = {} as Record<K, number>;
  for (const name of names) {
    const text = values[name];
    const value = Number(text);
    if (!Number.isInteger(value) || value < 1)
      throw new Error(`--${name} wants a whole number of at least 1, not ${text}`);
    chosen[name] = value;
  }
  return chosen;
}
