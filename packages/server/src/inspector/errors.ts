/**
 * Errors of the inspector: a page whose files cannot be found next to the server's code, and a
 * Stately bridge given something that is not a WebSocket URL.
 */
import { FerryError, type FerryErrorOptions, registerErrors } from '@ferry/core';

/** The inspector page's static files are missing from the installed package. */
export class InspectorAssetsMissingError extends FerryError {
  constructor(file: string, tried: readonly string[], options: FerryErrorOptions = {}) {
    super(
      'ERR_INSPECTOR_ASSETS_MISSING',
      `The inspector page file '${file}' is in none of ${tried.join(', ')}; reinstall @ferry/server (its src/inspector/page folder ships the page) or mount the server without inspectorRoutes().`,
      options,
    );
    this.name = 'InspectorAssetsMissingError';
  }
}

/** `startStatelyBridge` / `ferry serve --inspect` got a URL that is not `ws://` or `wss://`. */
export class InvalidInspectorUrlError extends FerryError {
  constructor(url: string, options: FerryErrorOptions = {}) {
    super(
      'ERR_INVALID_INSPECTOR_URL',
      `'${url}' is not a WebSocket URL for the Stately inspector; pass one like ws://127.0.0.1:8080.`,
      options,
    );
    this.name = 'InvalidInspectorUrlError';
  }
}

registerErrors({ InspectorAssetsMissingError, InvalidInspectorUrlError });
