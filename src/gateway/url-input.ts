import { walkObjects } from './walk-objects.js';

/**
 * Content the provider fetches by URL while serving a call: its tokens are billed as input but
 * are not in the request body, so the body cannot bound them (usage.ts inputTokensBound) — as
 * with server tools' results (server-input.ts). Found in any of the three wire formats,
 * wherever nested (a tool result's content too):
 * - images: Anthropic `{type: "image", source: {type: "url"}}`, Chat Completions `image_url`
 *   with an http(s) URL, Responses `input_image` with an http(s) `image_url`;
 * - documents: Anthropic `{type: "document", source: {type: "url"}}`, Responses
 *   `{type: "input_file", file_url}`.
 * Each image is bounded by the providers' image rules (input-images.ts IMAGE_TOKENS_BOUND); a
 * document's pages are not, so each reserves {@link URL_DOCUMENT_TOKENS} and the call is charged
 * what the provider reports (server-input.ts). Found in the same walk as inline images
 * (input-images.ts requestMedia).
 */

/** Input tokens reserved per document the provider fetches by URL (a PDF of ~5 pages at Anthropic's 1,500–3,000 tokens a page), tokens. */
export const URL_DOCUMENT_TOKENS = 10_000;

/** Nesting searched (input → message → content → tool_result content → block → source). */
const MAX_DEPTH = 8;

/** What {@link urlInput} found: images and documents the provider fetches by URL. */
export interface UrlInput {
  images: number;
  documents: number;
}

/** The images and documents by URL in parsed request body `body` (see the module comment); null when there are none. */
export function urlInput(body: unknown): UrlInput | null {
  const found: UrlInput = { images: 0, documents: 0 };
  walkObjects(body, MAX_DEPTH, (o) => {
    const kind = urlKind(o);
    if (kind === null) return false;
    found[kind]++;
    return true;
  });
  return found.images + found.documents === 0 ? null : found;
}

const isHttp = (v: unknown): boolean => typeof v === 'string' && /^https?:\/\//i.test(v);

/** Whether block `o` is an image or a document the provider fetches by URL, else null. */
export function urlKind(o: Record<string, unknown>): 'images' | 'documents' | null {
  const t = o.type;
  if (t === 'image' || t === 'document') {
    const s = o.source as Record<string, unknown> | undefined;
    return s !== null && typeof s === 'object' && s.type === 'url' ? (t === 'image' ? 'images' : 'documents') : null;
  }
  if (t === 'image_url') {
    const u = o.image_url as Record<string, unknown> | string | undefined;
    return isHttp(typeof u === 'string' ? u : u?.url) ? 'images' : null;
  }
  if (t === 'input_image') return isHttp(o.image_url) ? 'images' : null;
  if (t === 'input_file') return isHttp(o.file_url) ? 'documents' : null;
  return null;
}
