/**
 * Errors of the inspector: a page whose files cannot be found next to the server's code, a
 * Stately bridge given something that is not a WebSocket URL, a request without a key or session,
 * and an asset that does not exist.
 */
import { FerryError, type FerryErrorOptions, registerErrors } from '@ferry/core/base';

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

/** A request to the inspector's data without a key or a session (and `?key=` is not one). */
export class InspectorUnauthorizedError extends FerryError {
  constructor(options: FerryErrorOptions = {}) {
    super(
      'ERR_UNAUTHORIZED',
      "The inspector requires an API key: enter it on the page, or send it as 'Authorization: Bearer <key>' (or 'X-API-Key') — POST /inspector/session with it sets the session cookie the event stream takes; a key in the URL (?key=) is not accepted.",
      options,
    );
    this.name = 'InspectorUnauthorizedError';
  }
}

/** An inspector page asset that does not exist. */
export class InspectorAssetNotFoundError extends FerryError {
  constructor(file: string, options: FerryErrorOptions = {}) {
    super(
      'ERR_NOT_FOUND',
      `The inspector has no asset '${file}'; the page loads its files from /inspector/assets/ by itself.`,
      options,
    );
    this.name = 'InspectorAssetNotFoundError';
  }
}

registerErrors({
  InspectorAssetsMissingError,
  InvalidInspectorUrlError,
  InspectorUnauthorizedError,
  InspectorAssetNotFoundError,
});
