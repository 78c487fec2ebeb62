/**
 * A Flotilla token (`flj_` job, `flr_` runner registration, `fla_`/`flt_` API: core/log.ts
 * redact's shapes) in a query parameter's value, raw or percent-encoded.
 */
const TOKEN_IN_VALUE = /fl[a-z]_[A-Za-z0-9_-]{8,}/;

/**
 * `pathAndQuery` (`/v1/chat/completions?api-version=...&key=flj_...`) without the query
 * parameters whose value holds a Flotilla token: the gateway forwards a client's query as sent
 * (an Azure-style `api-version`, Anthropic's `?beta=true`), and a client that also put its job
 * token there (`?key=`, as some SDKs do for Google's API) had it sent to the provider (a fresh
 * tester's finding); upstreams never see a job token, in a header or a query. Every other
 * parameter keeps its bytes and order; a query left empty drops its `?`. A `#fragment` (which
 * no HTTP client sends) is left as it is.
 */
export function withoutTokenParams(pathAndQuery: string): string {
  const q = pathAndQuery.indexOf('?');
  if (q < 0 || !TOKEN_IN_VALUE.test(decodeLoosely(pathAndQuery.slice(q + 1)))) return pathAndQuery;
  const kept = pathAndQuery
    .slice(q + 1)
    .split('&')
    .filter((part) => !TOKEN_IN_VALUE.test(decodeLoosely(part)));
  return kept.length === 0 ? pathAndQuery.slice(0, q) : `${pathAndQuery.slice(0, q)}?${kept.join('&')}`;
}

/** `text` percent-decoded (`+` as a space), or as it is when it does not decode. */
function decodeLoosely(text: string): string {
  try {
    return decodeURIComponent(text.replaceAll('+', ' '));
  } catch {
    return text;
  }
}
