/** Signed snapshots: the statements a writer signs, the form of trusted keys, the freshness decision. */
export * from './freshness.js';
export * from './keys.js';
export * from './statement.js';
