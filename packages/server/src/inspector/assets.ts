/**
 * The inspector page's static files (HTML, CSS, vanilla JS modules) in `src/inspector/page/`,
 * read once when the routes are built and served with an ETag and a strict Content-Security-Policy
 * (everything from this origin, nothing inline, no CDN). The folder is looked up next to this
 * module first (running from source, or a build that copies it) and then in the package's `src`
 * (a plain `tsc` build, which emits only the TypeScript).
 */
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import type { ServerResponse } from 'node:http';
import { fileURLToPath } from 'node:url';
import { InspectorAssetsMissingError } from './errors.js';

export interface Asset {
  readonly body: Buffer;
  readonly contentType: string;
  readonly etag: string;
}

const PAGE_DIRS = ['./page/', '../../src/inspector/page/'];

/** The page's files under `/inspector/assets/` (the HTML is served at the page's own paths). */
export const PAGE_ASSETS = [
  'inspector.css',
  'inspector.js',
  'connection.js',
  'overview.js',
  'detail.js',
  'chart.js',
  'format.js',
] as const;

const CONTENT_TYPES: Readonly<Record<string, string>> = {
  html: 'text/html; charset=utf-8',
  css: 'text/css; charset=utf-8',
  js: 'text/javascript; charset=utf-8',
};

/** No inline script or style, nothing from another origin; the page only talks to this server. */
export const CONTENT_SECURITY_POLICY = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "connect-src 'self'",
  "img-src 'self' data:",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join('; ');

function etagOf(body: Buffer): string {
  return `"${createHash('sha256').update(body).digest('base64url').slice(0, 27)}"`;
}

/** Reads `file` from the page folder; throws {@link InspectorAssetsMissingError} when it is nowhere. */
export function loadAsset(file: string): Asset {
  const tried: string[] = [];
  let lastError: unknown;
  for (const dir of PAGE_DIRS) {
    const path = fileURLToPath(new URL(`${dir}${file}`, import.meta.url));
    tried.push(path);
    try {
      const body = readFileSync(path);
      const extension = file.slice(file.lastIndexOf('.') + 1);
      return {
        body,
        contentType: CONTENT_TYPES[extension] ?? 'application/octet-stream',
        etag: etagOf(body),
      };
    } catch (error) {
      lastError = error;
    }
  }
  throw new InspectorAssetsMissingError(file, tried, { cause: lastError });
}

/** `asset` with its body changed by `edit` (and an ETag of its own). */
export function variantOf(asset: Asset, edit: (text: string) => string): Asset {
  const body = Buffer.from(edit(asset.body.toString('utf8')));
  return { ...asset, body, etag: etagOf(body) };
}

/** Sends `asset` (304 when the client's copy is current); `no-cache` so a new build shows at once. */
export function sendAsset(res: ServerResponse, asset: Asset, ifNoneMatch: string | undefined): void {
  const headers = {
    'content-type': asset.contentType,
    'cache-control': 'no-cache',
    etag: asset.etag,
    'x-content-type-options': 'nosniff',
    'referrer-policy': 'no-referrer',
    'content-security-policy': CONTENT_SECURITY_POLICY,
  };
  if (ifNoneMatch === asset.etag) {
    res.writeHead(304, headers);
    res.end();
    return;
  }
  res.writeHead(200, { ...headers, 'content-length': asset.body.length });
  res.end(asset.body);
}
