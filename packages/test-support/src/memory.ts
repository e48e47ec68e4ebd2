/**
 * A full garbage collection, so memory readings count live data only (V8's `gc`, exposed for the
 * calling test: no `--expose-gc` flag needed on the test runner).
 */
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';

export function collectGarbage(): void {
  setFlagsFromString('--expose-gc');
  (runInNewContext('gc') as () => void)();
}
