import { ApiError } from './errors.js';

/**
 * `id` as a path segment. @throws ApiError `invalid_request` (status 0, nothing sent) naming
 * `field` when it is not a positive integer.
 */
export function idPath(id: number, field: string): string {
  if (!Number.isInteger(id) || id <= 0) throw new ApiError(0, 'invalid_request', `${field} must be a positive integer, got ${String(id)}`, field);
  return String(id);
}

/** A job's (or runner's) id as a path segment; the error says "job id" (field `id`). */
export function jobIdPath(id: number): string {
  if (!Number.isInteger(id) || id <= 0) throw new ApiError(0, 'invalid_request', `job id must be a positive integer, got ${String(id)}`, 'id');
  return String(id);
}

/**
 * The most telling message of a fetch failure: its `cause` (e.g. ECONNREFUSED) when it has one.
 * A TLS handshake that failed at the record layer (an `https://` URL for a plain-HTTP port:
 * OpenSSL's multi-line `...:SSL routines:ssl3_get_record:wrong version number:...`) is one line:
 * `TLS handshake failed (wrong version number): is the server https?`.
 */
export function causeOf(err: unknown): string {
  if (err instanceof Error) {
    const cause = (err as Error & { cause?: unknown }).cause;
    if (cause instanceof Error && cause.message) {
      const { code, reason } = cause as Error & { code?: unknown; reason?: unknown };
      if ((typeof code === 'string' && code.startsWith('ERR_SSL_')) || cause.message.includes('SSL routines')) {
        return `TLS handshake failed (${typeof reason === 'string' && reason ? reason : typeof code === 'string' ? code : 'SSL error'}): is the server https?`;
      }
      return cause.message;
    }
    return err.message;
  }
  return String(err);
}
