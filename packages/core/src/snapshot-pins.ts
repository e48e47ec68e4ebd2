/**
 * The `X-Ferry-Snapshot` request header (Flight: `x-ferry-snapshot` call metadata; embed: the
 * `snapshots` query option): the snapshot of each dataset a client pins its query to, in the syntax
 * of the answer header of the same name (`orders=17, users=4`), so a client can send back what an
 * answer said and read the same state again while swaps happen. Pure: the runtime decides which
 * pinned snapshots it still holds.
 */

/** A dataset name as the header carries it: what a spicepod's dataset names may be. */
const NAME = /^[A-Za-z_][A-Za-z0-9_.-]*$/;

/** How to write the header, said in every problem. */
const FIX =
  "send 'dataset=snapshotId' pairs separated by commas, as the X-Ferry-Snapshot answer header gives them (orders=17, users=4)";

/**
 * The pins an `X-Ferry-Snapshot` value asks for, dataset → snapshot id, or the problem with it
 * (one clause naming the part that could not be read and how to write it). An empty value pins
 * nothing.
 */
export function parseSnapshotPins(
  value: string,
): { readonly pins: Readonly<Record<string, number>> } | { readonly problem: string } {
  // No prototype: a pin on a dataset named `__proto__` is a pin like any other, never dropped.
  const pins: Record<string, number> = Object.create(null) as Record<string, number>;
  for (const raw of value.split(',')) {
    const part = raw.trim();
    if (part === '') continue;
    const equals = part.indexOf('=');
    if (equals < 0) return { problem: `'${part}' names no snapshot; ${FIX}` };
    const name = part.slice(0, equals).trim();
    const id = part.slice(equals + 1).trim();
    if (!NAME.test(name)) return { problem: `'${name}' is not a dataset name; ${FIX}` };
    if (!/^\d{1,15}$/.test(id)) return { problem: `'${id}' (for ${name}) is not a snapshot id; ${FIX}` };
    const lower = name.toLowerCase();
    const earlier = Object.keys(pins).find((known) => known.toLowerCase() === lower);
    if (earlier !== undefined && pins[earlier] !== Number(id)) {
      return { problem: `dataset '${name}' is pinned twice (${pins[earlier]} and ${id}); ${FIX}` };
    }
    pins[earlier ?? name] = Number(id);
  }
  return { pins };
}
