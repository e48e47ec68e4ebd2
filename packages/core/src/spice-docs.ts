/** Spice's documentation pages its messages point to (quoted word for word in Ferry's copies of them). */

/** The page every snapshot and notification message of Spice points to. */
export const SNAPSHOTS_DOCS = 'https://spiceai.org/docs/features/data-acceleration/snapshots';
