/**
 * B15's burst from a process of its own, so the scenario can set its priority: `count` heavy
 * queries (`burst.ts`, numbered from `first`) sent at once, each on a connection of its own, every
 * body read whole. Prints one JSON line: `{ "ms": <first request to last answer>, "answers": [...] }`.
 * Usage: `node burst-client.js <base-url> <first> <count>`.
 */
import { heavy, post } from './burst.js';

const base = new URL(process.argv[2] ?? '');
const first = Number(process.argv[3] ?? 0);
const count = Number(process.argv[4] ?? 0);
const began = performance.now();
const answers = await Promise.all(Array.from({ length: count }, (_, n) => post(base, heavy(first + n))));
process.stdout.write(`${JSON.stringify({ ms: performance.now() - began, answers })}\n`);
