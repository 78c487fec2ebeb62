/** A word a POSIX shell (sh, bash, zsh) takes literally: no `=` first (zsh expands `=cmd`). */
const PLAIN = /^[A-Za-z0-9_@%+:,./-][A-Za-z0-9_@%+=:,./-]*$/;

/**
 * `value` as one word of a POSIX shell command line (sh, bash, zsh), for the command lines the
 * CLI and the dashboard print to paste: as it is when every character is taken literally (`os=linux`,
 * `http://build-1:8787`), else in single quotes, a single quote inside written `'\''`
 * (`k=v v` → `'k=v v'`, `it's` → `'it'\''s'`, the empty string → `''`).
 */
export function shellQuote(value: string): string {
  if (PLAIN.test(value)) return value;
  return `'${value.replace(/'/g, `'\\''`)}'`;
}

/** The words of a command line, each {@link shellQuote}d, joined by spaces. */
export function shellLine(words: readonly string[]): string {
  return words.map(shellQuote).join(' ');
}
