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

/**
 * Builds an {@link ApiError} from a non-2xx response (reads its body). A reply that is not a
 * Flotilla error body (the control plane answers every error with one) came from something else
 * at that URL: the message is one line naming `server` (default: the reply's origin), the status
 * and the content type, e.g. `GET /api/jobs: http://h:8080 answered 404 with text/html: is it the
 * Flotilla control plane?`; a short plain-text or JSON body is quoted on that line, never HTML.
 */
export async function apiErrorFromResponse(res: Response, what: string, server?: string): Promise<ApiError> {
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
  const type = contentTypeOf(res);
  const quotable = type === 'no content type' || type === 'text/plain' || type.endsWith('json');
  const snippet = quotable ? oneLineSnippet(text) : '';
  return new ApiError(res.status, `http_${res.status}`, `${what}: ${server ?? originOf(res.url)} answered ${res.status} with ${type}${snippet ? ` (${snippet})` : ''}: is it the Flotilla control plane?`);
}

/** The media type of a reply (`text/html`), or `no content type`. */
export function contentTypeOf(res: Response): string {
  return (res.headers.get('content-type') ?? '').split(';')[0]!.trim().toLowerCase() || 'no content type';
}

/** `http://host:port` of a URL, or `the server` when there is none (a stubbed fetch). */
function originOf(url: string): string {
  return URL.canParse(url) ? new URL(url).origin : 'the server';
}

/** At most 200 characters of `text` on one line: whitespace runs become one space, control characters go. */
function oneLineSnippet(text: string): string {
  // eslint-disable-next-line no-control-regex -- control characters are what it removes
  const line = text.replace(/\s+/g, ' ').replace(/[\u0000-\u001f\u007f-\u009f\u2028\u2029]/g, '').trim();
  return line.length > 200 ? `${line.slice(0, 200)}…` : line;
}
