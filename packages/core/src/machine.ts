/**
 * `@ferry/core/machine`: what a dataset thread needs of the core and nothing more — the dataset
 * machine and its status view, the error (de)serialisation that crosses threads, and the engine
 * names. The package's main entry also carries the spicepod loader (and with it `yaml`), and
 * `@ferry/core/base` the config rules, notification routing and signing keys, which a thread per
 * dataset must not pay for (`test/architecture/thread-imports.test.ts`).
 */
export * from './common.js';
export { type EngineName, type FileFormat, fileFormatOf } from './engines.js';
export * from './machine/index.js';
export {
  type Freshness,
  type FreshnessInput,
  heartbeatFreshness,
  namesAnotherSnapshot,
} from './signing/freshness.js';
export type { HeartbeatStatement } from './signing/statement.js';
