/** The most characters of a bad value an error message repeats. */
export const ECHO_MAX = 100;

/** What {@link cutEcho} puts after a cut value. */
const CUT = /… \(\d+ characters\)$/;

/**
 * `value` as an error message repeats it: whole up to `max` characters (Unicode code points),
 * else its first `max` characters and then `… (5000 characters)`, its length. A 5,000-character
 * label value must not come back as a 5,000-character error.
 */
export function cutEcho(value: string, max = ECHO_MAX): string {
  if (value.length <= max) return value;
  const chars = [...value];
  return chars.length <= max ? value : `${chars.slice(0, max).join('')}… (${chars.length} characters)`;
}

/**
 * `message` with every quoted run (`'...'` or `"..."`) longer than `max` characters cut by
 * {@link cutEcho}: for messages made by code that repeats a value in full (commander's
 * `option '--labels <k=v,...>' argument '...' is invalid`).
 */
export function cutQuotedEchoes(message: string, max = ECHO_MAX): string {
  const long = new RegExp(`'([^']{${max + 1},})'|"([^"]{${max + 1},})"`, 'g');
  return message.replace(long, (m, single: string | undefined, double: string | undefined) => {
    const q = single !== undefined ? "'" : '"';
    const text = single ?? double ?? '';
    if (CUT.test(text) && [...text.replace(CUT, '')].length <= max) return m; // cut already
    const cut = cutEcho(text, max);
    return cut.length < m.length - 2 ? `${q}${cut}${q}` : m;
  });
}
