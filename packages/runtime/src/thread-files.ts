/**
 * Where a thread's entry file is. Threads always run built JavaScript: next to this module when it
 * is itself built, or in the package's `dist/` when this module was loaded from sources (tests).
 */
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { ThreadFileMissingError } from './errors.js';

export function threadFile(name: string): URL {
  const sibling = new URL(`./${name}.js`, import.meta.url);
  if (existsSync(sibling)) return sibling;
  const built = new URL(`../dist/${name}.js`, import.meta.url);
  if (existsSync(built)) return built;
  throw new ThreadFileMissingError(fileURLToPath(sibling));
}
