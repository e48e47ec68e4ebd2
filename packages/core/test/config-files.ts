/** A spicepod's folder for the loader's `readFile`, as a map of file names to text (others are missing). */
import type { FileRead } from '../src/config/index.js';

export function filesOf(files: Readonly<Record<string, string>>): (path: string) => FileRead {
  return (path) => {
    const text = files[path];
    return text === undefined ? { problem: 'ENOENT: no such file or directory' } : { text };
  };
}
