import { brotliDecompress, gunzip, inflate, inflateRaw, type ZlibOptions } from 'node:zlib';

/** The request `content-encoding`s the gateway decodes (RFC 9110 §8.4.1; `x-gzip` is gzip). */
const DECODERS: Record<string, (buf: Buffer, opts: ZlibOptions, cb: (err: Error | null, out: Buffer) => void) => void> = {
  gzip: gunzip,
  'x-gzip': gunzip,
  // HTTP's "deflate" is zlib-wrapped (RFC 9110); some clients send raw deflate: tried second
  deflate: (buf, opts, cb) => inflate(buf, opts, (err, out) => (err && (err as { code?: string }).code === 'Z_DATA_ERROR' ? inflateRaw(buf, opts, cb) : cb(err, out))),
  br: brotliDecompress,
};

/** What {@link decodeBody} found. */
export type DecodedBody =
  | { body: Buffer }
  /** Decoded, it would be over `limit` bytes (a decompression bomb, or just too big): 413. */
  | { tooLarge: true }
  /** An encoding the gateway does not decode (named as sent, lower case): 415. */
  | { unsupported: string }
  /** The bytes are not valid data of their encoding: 400. */
  | { corrupt: string };

/** The encodings a `content-encoding` value lists, in the order they were applied; [] for none / identity. */
export function encodingsOf(value: string | string[] | undefined): string[] {
  if (value === undefined) return [];
  const text = Array.isArray(value) ? value.join(',') : value;
  const out: string[] = [];
  for (const part of text.split(',')) {
    const e = part.trim().toLowerCase();
    if (e && e !== 'identity') out.push(e);
  }
  return out;
}

/**
 * Decodes a request body sent with `content-encoding` (gzip, deflate, br; several listed are
 * undone last-applied first), off the main thread (zlib's thread pool). The decoded size is
 * bounded by `limit` bytes (zlib's `maxOutputLength`: it stops there, so a small body that
 * expands to gigabytes costs at most `limit` bytes of memory).
 */
export function decodeBody(encodings: string[], body: Buffer, limit: number): Promise<DecodedBody> {
  for (const e of encodings) if (!DECODERS[e]) return Promise.resolve({ unsupported: e });
  return new Promise((resolve) => {
    let i = encodings.length - 1;
    const step = (buf: Buffer): void => {
      if (i < 0) return resolve({ body: buf });
      const e = encodings[i--]!;
      DECODERS[e]!(buf, { maxOutputLength: Math.max(1, limit) }, (err, out) => {
        if (!err) return step(out);
        if ((err as { code?: string }).code === 'ERR_BUFFER_TOO_LARGE' || err instanceof RangeError) return resolve({ tooLarge: true });
        resolve({ corrupt: e });
      });
    };
    step(body);
  });
}

/**
 * `headers` for a body {@link decodeBody} decoded: a copy without `content-encoding` and
 * `content-length` — the body is plain JSON now, its encoding no longer describes it (nor goes
 * upstream), and its length is the decoded one.
 */
export function decodedHeaders<H extends Record<string, unknown>>(headers: H): H {
  const out = { ...headers };
  delete out['content-encoding'];
  delete out['content-length'];
  return out;
}
