/**
 * What a runtime says once at start about signed snapshots: which datasets serve only snapshots
 * signed by a trusted key (`ferry_trusted_keys`) and which serve whatever metadata.json names. One
 * line for each kind, whatever the number of datasets, so an operator reading the start of the log
 * sees at once that a dataset is not verified.
 */
import type { DatasetConfig } from '@ferry/core/base';

export interface NoticeLine {
  readonly message: string;
  readonly fields: Readonly<Record<string, string | number>>;
}

/** The names, the first `shown` of them and how many more. */
function named(names: readonly string[], shown = 10): string {
  const more = names.length - shown;
  return more > 0 ? `${names.slice(0, shown).join(', ')} and ${more} more` : names.join(', ');
}

export function verificationNotices(datasets: readonly DatasetConfig[]): NoticeLine[] {
  const unverified = datasets.filter((dataset) => dataset.trustedKeys === undefined).map((d) => d.name);
  const verified = datasets.filter((dataset) => dataset.trustedKeys !== undefined);
  const lines: NoticeLine[] = [];
  if (unverified.length > 0) {
    lines.push({
      message: `Snapshots are not verified for ${unverified.length} dataset(s): ${named(unverified)} (ferry_trusted_keys is not set, so any snapshot metadata.json names is served)`,
      fields: { datasets: unverified.join(',') },
    });
  }
  if (verified.length > 0) {
    const keyIds = [
      ...new Set(verified.flatMap((dataset) => dataset.trustedKeys?.map((key) => key.keyId) ?? [])),
    ];
    lines.push({
      message: `Snapshots are served only when signed by a trusted key for ${verified.length} dataset(s): ${named(verified.map((d) => d.name))}`,
      fields: { datasets: verified.map((d) => d.name).join(','), keyIds: keyIds.join(',') },
    });
  }
  return lines;
}
