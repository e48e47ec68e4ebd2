// One DATE column written as JSON through @ferry/engines/namespaces: thread-modules.test.ts's
// control (a plain ES module, so that a bare worker imports it on any Node).
import { batchObjects } from '@ferry/engines/namespaces';
import * as arrow from 'apache-arrow';

export function dateJson() {
  const batch = new arrow.RecordBatch({
    d: arrow.vectorFromArray([new Date(Date.UTC(2022, 0, 8))], new arrow.DateDay()).data[0],
  });
  return batchObjects(batch).join(',');
}
