import { urlKind, type UrlInput } from './url-input.js';
import { walkObjects } from './walk-objects.js';

/**
 * Inline images in a model request, for the input estimate (budget.ts worstCaseMicros, the
 * estimate charged when usage is unknown). Their base64 text says little about what they cost:
 * a provider prices an image by its pixels, after scaling it down, not by its bytes. Counted by
 * bytes (⌈bytes / 3⌉ tokens), a 100 KB screenshot reserved about 44,000 input tokens (~$0.13 at
 * $3/MTok, ~$0.29 with the 1-hour cache-write rate) for an image that costs ~1,600; and a
 * small, well-compressed image of many pixels was under-counted.
 */

/**
 * Input tokens reserved per inline image: above what one image can cost on the providers'
 * documented rules — Anthropic scales an image to at most 1568 px on its long edge and ~1.15
 * megapixels (~1,600 tokens at (w × h) / 750); OpenAI's high detail is at most 85 + 170 × 8
 * tiles (1,445), and its patch-priced models at most 1,536 patches × 2.46 (3,779) — with room
 * for a model that allows more.
 */
export const IMAGE_TOKENS_BOUND = 6_000;

/** Input tokens charged per inline image when a call's usage is unknown (an estimate, marked as one): Anthropic's typical full-size image. */
export const IMAGE_TOKENS_ESTIMATE = 1_600;

/** Bodies smaller than this are not searched for images (their bytes bound them well enough, and the search costs CPU per call). */
const SEARCH_FROM_BYTES = 16 * 1024;

/** Nesting searched (messages → content → tool_result content → image → source). */
const MAX_DEPTH = 8;

/** What {@link inlineImages} found: `images` inline images, `bytes` the length of their base64 (or data: URL) text. */
export interface InlineImages {
  images: number;
  bytes: number;
}

const NONE: InlineImages = Object.freeze({ images: 0, bytes: 0 });

/**
 * The inline (base64) images of parsed request body `body` of `rawBytes` bytes, in any of the
 * three wire formats, wherever they are nested (a tool result's screenshot too):
 * - Anthropic Messages: `{ type: 'image', source: { type: 'base64', data } }`;
 * - OpenAI Chat Completions: `{ type: 'image_url', image_url: { url: 'data:...' } }`;
 * - OpenAI Responses: `{ type: 'input_image', image_url: 'data:...' }`.
 * Images by URL (fetched by the provider) are not counted: their size is not in the body.
 * Bodies under 16 KiB are not searched (none found).
 */
export function inlineImages(body: unknown, rawBytes: number): InlineImages {
  return rawBytes < SEARCH_FROM_BYTES ? NONE : requestMedia(body, rawBytes).images;
}

/** What {@link requestMedia} found: the inline images ({@link inlineImages}) and the content by URL (url-input.ts). */
export interface RequestMedia {
  images: InlineImages;
  byUrl: UrlInput | null;
}

/**
 * The inline images ({@link inlineImages}: only in bodies of 16 KiB or more) and the images and
 * documents the provider fetches by URL (url-input.ts, in any body) of parsed request body
 * `body` of `rawBytes` bytes, in ONE walk of it (this runs on every model call).
 */
export function requestMedia(body: unknown, rawBytes: number): RequestMedia {
  if (body === null || typeof body !== 'object') return { images: NONE, byUrl: null };
  const searchImages = rawBytes >= SEARCH_FROM_BYTES;
  const images = { images: 0, bytes: 0 };
  const byUrl: UrlInput = { images: 0, documents: 0 };
  walkObjects(body, MAX_DEPTH, (o) => {
    const data = searchImages ? imageData(o) : null;
    if (data !== null) {
      images.images++;
      images.bytes += data.length;
      return true;
    }
    const kind = urlKind(o);
    if (kind === null) return false;
    byUrl[kind]++;
    return true;
  });
  return { images: images.images === 0 ? NONE : images, byUrl: byUrl.images + byUrl.documents === 0 ? null : byUrl };
}

/** The base64 text of image block `o`, or null when it is not an inline image. */
function imageData(o: Record<string, unknown>): string | null {
  if (o.type === 'image') {
    const s = o.source as Record<string, unknown> | undefined;
    return s && s.type === 'base64' && typeof s.data === 'string' ? s.data : null;
  }
  if (o.type === 'image_url') {
    const u = o.image_url as Record<string, unknown> | string | undefined;
    const url = typeof u === 'string' ? u : typeof u?.url === 'string' ? u.url : null;
    return url !== null && url.startsWith('data:') ? url : null;
  }
  if (o.type === 'input_image') return typeof o.image_url === 'string' && o.image_url.startsWith('data:') ? o.image_url : null;
  return null;
}

/**
 * The request size the input estimates count, in bytes: the body without its inline images'
 * base64, plus {@link IMAGE_TOKENS_ESTIMATE} tokens' worth (4 bytes a token, as estimateUsage
 * counts) per image. The worst case adds {@link IMAGE_TOKENS_BOUND} per image on top of the
 * text's bytes instead (budget.ts worstCaseMicros `images`).
 */
export function estimateBytes(rawBytes: number, found: InlineImages): number {
  return found.images === 0 ? rawBytes : Math.max(0, rawBytes - found.bytes) + found.images * IMAGE_TOKENS_ESTIMATE * 4;
}
