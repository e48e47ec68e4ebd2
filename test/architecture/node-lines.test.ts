/**
 * The supported Node lines are said in one place (packages/runtime/src/host/node-lines.ts) and every
 * package.json an embedder installs says the same in `engines`, as does the workspace root. The
 * runtime's one-line notice on any other Node is checked here too.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import {
  isSupportedNode,
  MANY_DATASETS_ON_NODE_20,
  manyThreadsNotice,
  nodeLineNoticeOnce,
  SUPPORTED_NODE_RANGE,
} from '../../packages/runtime/src/host/node-lines.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));

const manifests = [
  'package.json',
  ...readdirSync(join(ROOT, 'packages'), { withFileTypes: true })
    .filter((entry) => entry.isDirectory())
    .map((entry) => join('packages', entry.name, 'package.json')),
];

describe('supported Node lines', () => {
  it('are 20, 22 and 24, from the releases vite 8 needs', () => {
    expect(SUPPORTED_NODE_RANGE).toBe('^20.19.0 || ^22.12.0 || ^24.0.0');
  });

  it.each(manifests)('%s says them in engines.node', (manifest) => {
    const { engines } = JSON.parse(readFileSync(join(ROOT, manifest), 'utf8')) as {
      engines?: { node?: string };
    };
    expect(engines?.node).toBe(SUPPORTED_NODE_RANGE);
  });

  it('a version is supported when its line is and it is at or after the line’s oldest release', () => {
    const supported = ['v20.19.0', 'v20.20.2', 'v22.12.0', 'v22.23.3', 'v24.0.0', 'v24.21.0'];
    const not = ['v18.20.4', 'v20.18.3', 'v21.7.3', 'v22.11.0', 'v23.11.1', 'v25.2.0', 'v26.1.0'];
    expect(supported.filter((version) => !isSupportedNode(version))).toEqual([]);
    expect(not.filter((version) => isSupportedNode(version))).toEqual([]);
  });

  it('a runtime started on another Node says so once, in one line naming the version and the lines', () => {
    expect(nodeLineNoticeOnce('v24.21.0')).toBeUndefined();
    const line = nodeLineNoticeOnce('v26.1.0');
    expect(line).toBe(
      'Node v26.1.0 is not a Node line Ferry supports (20, 22 and 24: ^20.19.0 || ^22.12.0 || ^24.0.0); it starts, but nothing is tested on it: run Ferry on one of those lines.',
    );
    expect(nodeLineNoticeOnce('v25.2.0')).toBeUndefined();
  });
});

describe('many datasets on Node 20', () => {
  const line = (datasets: number, version: string, execArgv: readonly string[] = []) =>
    manyThreadsNotice(datasets, version, execArgv);

  it('from 200 datasets, a runtime on Node 20 names the stall and both ways round it', () => {
    expect(line(MANY_DATASETS_ON_NODE_20, 'v20.20.2')).toBe(
      "200 datasets on Node v20.20.2: V8's garbage collector on this Node line can stall start-up for minutes with this many threads; run Ferry on Node 22 or 24, or start Node with --single-threaded-gc (node --single-threaded-gc <ferry> serve …).",
    );
    expect(line(1000, 'v20.19.0')).toContain('1000 datasets on Node v20.19.0');
  });

  it('says nothing below 200 datasets, on Node 22 or 24, or when the flag is given', () => {
    expect(line(199, 'v20.20.2')).toBeUndefined();
    expect(line(1000, 'v22.23.3')).toBeUndefined();
    expect(line(1000, 'v24.21.0')).toBeUndefined();
    expect(line(1000, 'v20.20.2', ['--single-threaded-gc'])).toBeUndefined();
    expect(line(1000, 'v20.20.2', ['--single_threaded_gc'])).toBeUndefined();
    expect(line(1000, 'v20.20.2', ['--max-old-space-size=4096'])).toBeDefined();
  });
});
