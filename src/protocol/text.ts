import { z } from 'zod';

/**
 * Characters that break a one-line display of text: the C0 controls (U+0000–U+001F: newline,
 * carriage return, tab, ESC that starts a terminal escape sequence), DEL and the C1 controls
 * (U+007F–U+009F, U+009B being a one-byte CSI in some terminals), and the Unicode line and
 * paragraph separators U+2028/U+2029 (a new line in browsers and many editors).
 */
// eslint-disable-next-line no-control-regex -- control characters are what it finds
export const LINE_BREAKING = /[\u0000-\u001f\u007f-\u009f\u2028\u2029]/;
// eslint-disable-next-line no-control-regex -- control characters are what it replaces
const LINE_BREAKING_RUNS = /[\u0000-\u001f\u007f-\u009f\u2028\u2029]+/g;

/**
 * `text` made safe to print on one line of a terminal table or listing: every run of
 * {@link LINE_BREAKING} characters becomes one space (so stored text from any source cannot
 * move the cursor, recolour the terminal or break a row). The text itself when it holds none.
 */
export function oneLine(text: string): string {
  return LINE_BREAKING.test(text) ? text.replace(LINE_BREAKING_RUNS, ' ') : text;
}

/**
 * A one-line text a person types and others see in listings (a hold's reason, a note):
 * trimmed, 1 to `max` characters, no {@link LINE_BREAKING} character (the error names it).
 */
export function oneLineText(max: number) {
  return z
    .string()
    .trim()
    .min(1)
    .max(max)
    .superRefine((v, ctx) => {
      if (LINE_BREAKING.test(v)) ctx.addIssue({ code: 'custom', message: `must be one line of printable text: found ${describeChar(v)} (it is shown in listings)` });
    });
}

/** The first {@link LINE_BREAKING} character of `v`, named: `U+2028`, `a newline (U+000A)`. */
export function describeChar(v: string): string {
  const ch = LINE_BREAKING.exec(v)?.[0] ?? '';
  const code = `U+${(ch.codePointAt(0) ?? 0).toString(16).toUpperCase().padStart(4, '0')}`;
  const names: Record<string, string> = { '\n': 'a newline', '\r': 'a carriage return', '\t': 'a tab', '\u001b': 'an escape (ESC)' };
  return names[ch] ? `${names[ch]} (${code})` : code;
}

// `scheme://user:password@` (the password up to the authority's last `@`), and `http(s)://token@`.
const URL_PASSWORD = /\b([a-z][a-z0-9+.-]*:\/\/)([^\s/?#@:"'`<>]*):([^\s/?#"'`<>]*)@/gi;
const HTTP_USER_ONLY = /\b(https?:\/\/)([^\s/?#@:"'`<>]+)@/gi;
// a password given as a URL's query parameter (`postgres://host/db?password=...`, `sslpassword`)
// (its value up to the next parameter or space, less a trailing `:,;.` of the text around it)
const QUERY_PASSWORD = /([?&](?:ssl)?password=)([^&#\s"'`<>]*[^&#\s"'`<>:,;.])/gi;

/**
 * `text` with the password of every URL in it masked: `https://user:secret@host/repo.git` →
 * `https://user:***@host/repo.git` (any scheme; the user name stays). An http(s) URL with a user
 * name but no password (`https://ghp_token@github.com/...`, a token passed as the user) has its
 * whole user part masked: `https://***@github.com/...`; other schemes keep a lone user name
 * (`ssh://git@host/...`). A `password=` / `sslpassword=` query parameter is masked too
 * (`postgres://host/db?password=***`: node-postgres reads it). For text shown to people (job inputs, error messages); what runs the
 * job keeps the real URL. The text itself when it holds no such URL.
 */
export function maskUrlPasswords(text: string): string {
  const queried = text.includes('password=') || text.includes('PASSWORD=') ? text.replace(QUERY_PASSWORD, '$1***') : text;
  if (!queried.includes('@')) return queried;
  return queried.replace(URL_PASSWORD, (_m, scheme: string, user: string) => `${scheme}${user}:***@`).replace(HTTP_USER_ONLY, (m, scheme: string, user: string) => (user === '***' ? m : `${scheme}***@`));
}

/**
 * The secrets {@link maskUrlPasswords} hides in `text`: each URL's password (in its user part or
 * a `password=` query parameter), and the user part of an http(s) URL without one (a token passed as the user). For masking them wherever else they
 * may show (a job's transcript: runner/event-secrets.ts). Empty when there is none.
 */
export function urlPasswords(text: string): string[] {
  const out: string[] = [];
  for (const m of text.matchAll(QUERY_PASSWORD)) if (m[2] && m[2] !== '***') out.push(m[2]);
  if (!text.includes('@')) return out;
  for (const m of text.matchAll(URL_PASSWORD)) if (m[3]) out.push(m[3]);
  for (const m of text.matchAll(HTTP_USER_ONLY)) if (m[2]) out.push(m[2]);
  return out;
}
