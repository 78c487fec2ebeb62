/**
 * A line splitter over a byte stream (a child's stdout/stderr).
 *
 * - Chunks that split a line, or a multi-byte UTF-8 character, are joined: lines are decoded
 *   only once complete, so a character split across two reads is never corrupted.
 * - `\n` ends a line; a trailing `\r` is removed.
 * - A line longer than `maxLineBytes` is not held forever: its first `maxLineBytes` bytes (cut
 *   at a character boundary) are reported with `truncated: true`, the rest is counted in
 *   `droppedBytes` and discarded up to the next newline.
 * - Bytes that are not valid UTF-8 are reported (`invalidUtf8: true`, with U+FFFD in `text`),
 *   never dropped silently.
 */

/** One line of output. `text` has no line terminator. */
export interface Line {
  text: string;
  /** True when the line exceeded the limit and was cut. */
  truncated: boolean;
  /** Bytes of the line that were discarded because of the limit (0 unless truncated). */
  droppedBytes: number;
  /** True when the line contained bytes that are not valid UTF-8. */
  invalidUtf8: boolean;
}

/** Default longest line kept whole: 8 MiB. */
export const DEFAULT_MAX_LINE_BYTES = 8 * 1024 * 1024;

const NL = 0x0a;
const CR = 0x0d;

/** Splits a byte stream into {@link Line}s, calling `onLine` for each, in order. */
export class LineSplitter {
  private parts: Buffer[] = [];
  private size = 0;
  /** Set while discarding the tail of an over-long line (its head was already reported). */
  private discarding = false;
  private dropped = 0;
  private readonly maxLineBytes: number;

  /**
   * @param onLine called once per line, synchronously from push()/end().
   * @param opts.maxLineBytes longest line kept whole, bytes (default 8 MiB, minimum 4).
   */
  constructor(
    private readonly onLine: (line: Line) => void,
    opts: { maxLineBytes?: number } = {},
  ) {
    this.maxLineBytes = Math.max(4, opts.maxLineBytes ?? DEFAULT_MAX_LINE_BYTES);
  }

  /** Feeds bytes (a Buffer, Uint8Array, or a string taken as UTF-8). */
  push(chunk: Uint8Array | string): void {
    let buf = typeof chunk === 'string' ? Buffer.from(chunk, 'utf8') : Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength);
    while (buf.length > 0) {
      const nl = buf.indexOf(NL);
      const piece = nl === -1 ? buf : buf.subarray(0, nl);
      if (this.discarding) {
        this.dropped += piece.length;
      } else {
        this.parts.push(piece);
        this.size += piece.length;
        if (this.size > this.maxLineBytes) this.cutLongLine();
      }
      if (nl === -1) break;
      this.finishLine();
      buf = buf.subarray(nl + 1);
    }
  }

  /** Flushes a final line that had no terminating newline. Call once, when the stream ends. */
  end(): void {
    if (this.discarding || this.size > 0) this.finishLine();
  }

  /** Reports the head of an over-long line now and discards the rest until the newline. */
  private cutLongLine(): void {
    const all = Buffer.concat(this.parts, this.size);
    let cut = this.maxLineBytes;
    // Step back over UTF-8 continuation bytes (10xxxxxx) so no character is split.
    while (cut > 0 && cut > this.maxLineBytes - 4 && ((all[cut] ?? 0) & 0xc0) === 0x80) cut--;
    this.parts = [all.subarray(0, cut)];
    this.size = cut;
    this.dropped = all.length - cut;
    this.discarding = true;
  }

  private finishLine(): void {
    let bytes = this.parts.length === 1 ? (this.parts[0] as Buffer) : Buffer.concat(this.parts, this.size);
    if (!this.discarding && bytes.length > 0 && bytes[bytes.length - 1] === CR) bytes = bytes.subarray(0, bytes.length - 1);
    const { text, invalid } = decode(bytes);
    const line: Line = { text, truncated: this.discarding, droppedBytes: this.dropped, invalidUtf8: invalid };
    this.parts = [];
    this.size = 0;
    this.discarding = false;
    this.dropped = 0;
    this.onLine(line);
  }
}

const strict = new TextDecoder('utf-8', { fatal: true });
const lenient = new TextDecoder('utf-8');

function decode(bytes: Uint8Array): { text: string; invalid: boolean } {
  try {
    return { text: strict.decode(bytes), invalid: false };
  } catch {
    return { text: lenient.decode(bytes), invalid: true };
  }
}

/**
 * `text` cut to its first `maxChars` characters (UTF-16 units; never half a surrogate pair) with
 * a marker saying how much went: `… [12,345 bytes cut]` (UTF-8 bytes of the cut part, thousands
 * separated). The text itself when it is not longer than `maxChars`. For the `log` events of
 * harness output lines (harness/claude-stream.ts LOG_LINE_LIMIT_CHARS).
 */
export function cutLogLine(text: string, maxChars: number): string {
  if (text.length <= maxChars) return text;
  let end = maxChars;
  const last = text.charCodeAt(end - 1);
  if (end > 0 && last >= 0xd800 && last <= 0xdbff) end--; // a high surrogate: keep its pair together
  return `${text.slice(0, end)}… [${Buffer.byteLength(text.slice(end)).toLocaleString('en-US')} bytes cut]`;
}

/**
 * The `log` text of a line too long to be read whole (`line.truncated`: past the splitter's
 * buffer, `line.droppedBytes` never read): `[line of N bytes truncated, not parsed] ` and its
 * start, within `maxChars`, ending in `… [M bytes cut]` where M counts every byte left out,
 * read or not (a 10,000,000-byte line said "[8,380,463 bytes cut]": only what the buffer held
 * beyond the part kept, a fresh tester's finding).
 */
export function truncatedLineText(line: Line, maxChars: number): string {
  const total = Buffer.byteLength(line.text) + line.droppedBytes;
  const head = `[line of ${total} bytes truncated, not parsed] `;
  const room = Math.max(0, maxChars - head.length - 32); // the marker's room
  if (line.text.length <= room && line.droppedBytes === 0) return head + line.text;
  let end = Math.min(room, line.text.length);
  const last = line.text.charCodeAt(end - 1);
  if (end > 0 && last >= 0xd800 && last <= 0xdbff) end--; // a high surrogate: keep its pair together
  const kept = line.text.slice(0, end);
  return `${head}${kept}… [${(total - Buffer.byteLength(kept)).toLocaleString('en-US')} bytes cut]`;
}
