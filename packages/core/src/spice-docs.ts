/** Spice's documentation pages its messages point to (quoted word for word in Ferry's copies of them). */

/** The page every snapshot and notification message of Spice points to. */
export const SNAPSHOTS_DOCS = 'https://spiceai.org/docs/features/data-acceleration/snapshots';

/** The S3 connector's auth section, which a snapshot dataset that cannot read its list points to. */
export const S3_AUTH_DOCS = 'https://spiceai.org/docs/components/data-connectors/s3#auth';
