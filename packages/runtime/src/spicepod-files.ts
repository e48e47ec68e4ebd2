/**
 * The files a spicepod names beside itself — a view's `sql_ref`, `runtime.tls`'s certificate and
 * key, the env secret store's dotenv files — read for the (pure) loader: a relative path resolves
 * against the spicepod's folder; a file that cannot be read says why (`ENOENT: …`).
 */
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import type { FileRead } from '@ferry/core/base';

export function spicepodFileReader(baseDir: string): (path: string) => FileRead {
  return (path) => {
    try {
      return { text: readFileSync(resolve(baseDir, path), 'utf8') };
    } catch (error) {
      const { code, message } = error as NodeJS.ErrnoException;
      return { problem: code === 'ENOENT' ? 'ENOENT: no such file' : (code ?? message) };
    }
  };
}
