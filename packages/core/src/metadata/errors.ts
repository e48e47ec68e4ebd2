/**
 * Errors of the metadata model: reading a location's metadata.json, resolving the snapshot URIs
 * it records, and appending to it on the writer side. Each has a stable `code`; the two a reader
 * reacts to differently carry `permanent` (retrying will not help vs a later rewrite may fix it).
 */
import { FerryError, type FerryErrorOptions, registerErrors } from '../errors.js';

export interface MetadataErrorOptions extends FerryErrorOptions {
  /** Set when the problem is confined to one dataset's entry (the others still parse). */
  readonly dataset?: string;
}

/** metadata.json is not valid JSON, or a required field is missing or has the wrong type. */
export class MetadataError extends FerryError {
  readonly location: string;
  /** Field path inside the document (`orders.snapshots[1].snapshot-size`), `''` for the document. */
  readonly path: string;
  readonly problem: string;
  readonly dataset?: string;
  /** A writer's next rewrite may fix it: keep serving what is loaded and read again later. */
  readonly permanent = false;

  constructor(location: string, path: string, problem: string, options: MetadataErrorOptions = {}) {
    const where = path === '' ? problem : `${path}: ${problem}`;
    const fix =
      options.dataset === undefined
        ? 'fix the writer that publishes this location'
        : `dataset '${options.dataset}' is refused until its writer publishes a valid entry`;
    super(
      'ERR_METADATA_INVALID',
      `Invalid metadata.json in location '${location}': ${where}; ${fix}.`,
      options,
    );
    this.name = 'MetadataError';
    this.location = location;
    this.path = path;
    this.problem = problem;
    if (options.dataset !== undefined) this.dataset = options.dataset;
  }
}

/** `format-version` is not 1: nothing in this location can be read by this version of Ferry. */
export class UnsupportedFormatVersionError extends FerryError {
  readonly location: string;
  readonly formatVersion: number;
  readonly permanent = true;

  constructor(formatVersion: number, location: string) {
    super(
      'ERR_UNSUPPORTED_FORMAT_VERSION',
      `unsupported format version ${formatVersion} in location '${location}'; ` +
        'upgrade Ferry or point it at a location written with format-version 1.',
    );
    this.name = 'UnsupportedFormatVersionError';
    this.location = location;
    this.formatVersion = formatVersion;
  }
}

/** The dataset's `current-schema-id` names no entry in its `schemas`. */
export class SchemaNotFoundError extends FerryError {
  readonly dataset: string;
  readonly schemaId: number;

  constructor(dataset: string, schemaId: number) {
    super(
      'ERR_SCHEMA_NOT_FOUND',
      `Dataset '${dataset}' has no schema entry for its current-schema-id ${schemaId}; ` +
        'republish the dataset so metadata.json records its schema.',
    );
    this.name = 'SchemaNotFoundError';
    this.dataset = dataset;
    this.schemaId = schemaId;
  }
}

/** A schema that is not valid Arrow JSON (unknown type, wrong parameters, missing field keys). */
export class ArrowSchemaError extends FerryError {
  readonly path: string;
  readonly problem: string;

  constructor(subject: string, path: string, problem: string, options: FerryErrorOptions = {}) {
    const where = path === '' ? problem : `${path}: ${problem}`;
    super(
      'ERR_ARROW_SCHEMA_INVALID',
      `Invalid Arrow schema for ${subject}: ${where}; describe it with the types the arrow crate serialises.`,
      options,
    );
    this.name = 'ArrowSchemaError';
    this.path = path;
    this.problem = problem;
  }
}

/** A writer tried to publish a schema that neither equals nor widens the recorded one. */
export class IncompatibleSchemaError extends FerryError {
  readonly dataset: string;
  readonly schemaId: number;
  readonly difference: string;

  constructor(dataset: string, schemaId: number, difference: string) {
    super(
      'ERR_INCOMPATIBLE_SCHEMA',
      `Cannot publish dataset '${dataset}': its schema is incompatible with recorded schema ${schemaId} ` +
        `(${difference}); keep the recorded fields in order and only append new ones, or publish a new dataset.`,
    );
    this.name = 'IncompatibleSchemaError';
    this.dataset = dataset;
    this.schemaId = schemaId;
    this.difference = difference;
  }
}

/** A manifest that cannot be used: the reader falls back to the full download. */
export class BlockManifestError extends FerryError {
  constructor(uri: string, reason: string) {
    super(
      'ERR_BLOCK_MANIFEST_INVALID',
      `Block manifest '${uri}' cannot be used: ${reason}; the snapshot is downloaded whole (republish it with Ferry's writer to get a valid manifest).`,
    );
    this.name = 'BlockManifestError';
  }
}

registerErrors({
  BlockManifestError,
  MetadataError,
  UnsupportedFormatVersionError,
  SchemaNotFoundError,
  ArrowSchemaError,
  IncompatibleSchemaError,
});
