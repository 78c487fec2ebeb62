import { ApiErrorBody } from '../protocol/index.js';

/**
 * An error from the Flotilla API, or from reaching it.
 * - `status`: the HTTP status (0 when the server could not be reached at all).
 * - `code`: the server's stable error code (`unauthorized`, `unknown_agent`, `invalid_input`,
 *   ...), or one of the client's own: `network` (no connection), `bad_response` (a reply that
 *   does not match the protocol schema), `http_<status>` (an error reply without an error body).
 * - `field`: the dotted path of the offending input, when the server named one.
 * The message never contains the API token.
 */
export class ApiError extends Error {
  override readonly name = 'ApiError';
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly field?: string,
  ) {
    super(message);
  }
}

/** Builds an {@link ApiError} from a non-2xx response (reads its body). */
export async function apiErrorFromResponse(res: Response, what: string): Promise<ApiError> {
  let text = '';
  try {
    text = await res.text();
  } catch {
    // body unreadable: fall through with an empty text
  }
  try {
    const parsed = ApiErrorBody.safeParse(JSON.parse(text));
    if (parsed.success) {
      const e = parsed.data.error;
      return new ApiError(res.status, e.code, e.message, e.field);
    }
  } catch {
    // not JSON
  }
  const snippet = text.trim().slice(0, 200);
  return new ApiError(res.status, `http_${res.status}`, `${what}: HTTP ${res.status}${snippet ? `: ${snippet}` : ''}`);
}
