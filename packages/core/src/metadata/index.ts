/** The metadata.json model of @ferry/core: types, parsing, Arrow schemas, queries and the writer's append. */
export * from './append.js';
export { parseArrowSchema, serializeArrowSchema } from './arrow-schema.js';
export * from './block-manifest.js';
export * from './errors.js';
export * from './parse.js';
export * from './queries.js';
export * from './schema.js';
export * from './types.js';
