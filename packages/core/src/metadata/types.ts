/**
 * The typed model of a location's `metadata.json` (see the snapshot-store spec). Parsing lives in
 * `parse.ts`; these types are what the rest of Ferry reads. Wire names (`snapshot-id`) become
 * camelCase here; the Arrow schema keeps the arrow crate's JSON form untouched.
 */

/** An Arrow data type as the Rust arrow crate serialises it: `"Int64"`, `{"Decimal128":[38,10]}`, … */
export type ArrowDataType = string | { readonly [variant: string]: unknown };

export interface ArrowField {
  readonly name: string;
  readonly data_type: ArrowDataType;
  readonly nullable: boolean;
  readonly dict_id?: number;
  readonly dict_is_ordered?: boolean;
  readonly metadata: Readonly<Record<string, string>>;
}

export interface ArrowSchema {
  readonly fields: readonly ArrowField[];
  readonly metadata: Readonly<Record<string, string>>;
}

export interface SchemaEntry {
  readonly schemaId: number;
  readonly schema: ArrowSchema;
}

export interface SnapshotEntry {
  readonly snapshotId: number;
  readonly timestampMs: number;
  /** Absolute URI of the snapshot object, as recorded (`s3://bucket/prefix/...` or `file:///...`). */
  readonly uri: string;
  readonly checksum: string;
  readonly checksumAlgorithm: string;
  readonly size: number;
  readonly engine?: string;
  readonly rowCount?: number;
  readonly lastUpdatedAtMs?: number;
}

export interface DatasetMetadata {
  readonly name: string;
  readonly engine?: string;
  readonly schemas: readonly SchemaEntry[];
  readonly currentSchemaId: number;
  readonly snapshots: readonly SnapshotEntry[];
  /** Absent when the dataset has an entry but nothing is current yet. */
  readonly currentSnapshotId?: number;
  readonly properties: Readonly<Record<string, string>>;
}

export interface StoreMetadata {
  readonly formatVersion: 1;
  readonly location: string;
  readonly lastUpdatedMs: number;
  readonly datasets: ReadonlyMap<string, DatasetMetadata>;
}
