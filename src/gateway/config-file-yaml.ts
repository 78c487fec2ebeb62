import { isMap, isScalar, visit, type Document, type LineCounter, type Node } from 'yaml';
import { PLAIN_DECIMAL } from '../protocol/usd.js';

/**
 * What flotilla.yaml must look like as YAML before its values are read (config-file.ts
 * loadGatewayFile): no key given twice in a mapping, only known top-level sections, and names
 * YAML reads as text. Each refusal names the file and the line, in the user's words.
 */

/**
 * Refuses a key of `gateway.models` or `gateway.prices` that YAML reads as something other than
 * a string: `1e3:` is the number 1000, `007:` the number 7, `true:` a boolean, `~:` null, `? [a,
 * b]` a list; each would price or route another name than the one written (the API takes
 * `"1e3"` as written). Quoting it keeps it a name.
 * @throws Error `FILE:LINE: gateway.prices: the model name 1e3 is read by YAML as the number 1000, not a name: quote it ("1e3")`.
 */
export function refuseNonStringKeys(file: string, doc: Document, lines: LineCounter): void {
  for (const section of ['models', 'prices'] as const) {
    const map = doc.getIn(['gateway', section], true);
    if (!isMap(map)) continue;
    for (const item of map.items) {
      const key = item.key as Node | null;
      const what = section === 'models' ? 'model pattern' : 'model name';
      const at = key?.range ? `${file}:${lines.linePos(key.range[0]).line}` : file;
      if (isScalar(key) && key.value === '__proto__') {
        // the validation of a record drops this key (prototype pollution): it would be ignored without a word
        throw new Error(`${at}: gateway.${section}: the ${what} "__proto__" cannot be read from a file (it would be dropped): ${section === 'models' ? 'route it with flotilla models set' : 'price it with flotilla models price'}`);
      }
      if (isScalar(key) && typeof key.value === 'string') continue;
      const written = isScalar(key) && typeof key.source === 'string' ? key.source : key ? String(key) : '';
      const read = isScalar(key) ? (key.value === null ? 'null' : `the ${typeof key.value} ${String(key.value)}`) : 'a collection';
      throw new Error(`${at}: gateway.${section}: the ${what} ${written || '(empty)'} is read by YAML as ${read}, not a name: quote it (${JSON.stringify(written)})`);
    }
  }
}

/**
 * Refuses a number of `gateway.prices` (a rate, `longContext`'s too) that YAML reads as a
 * number but that is not written as a plain decimal (protocol/usd.ts PLAIN_DECIMAL, the rule of
 * the CLI's `models price` flags): `0x10` is 16 to YAML, `1e1` 10, `+3` 3, `.inf` infinity
 * (fresh-user finding: `input: 0x10` priced $16 per million without a word); or that YAML reads
 * as another number than its decimal text (`010` is octal 8 under `%YAML 1.1`). Text (`"3"`) is
 * left to the schema, which refuses it.
 * @throws Error `FILE:LINE: gateway.prices.m1.input: 0x10 is not a plain decimal (...)`, or
 *   `... 010 is read by YAML as 8: ...`.
 */
export function refuseUnplainRates(file: string, doc: Document, lines: LineCounter): void {
  const prices = doc.getIn(['gateway', 'prices'], true);
  if (!isMap(prices)) return;
  const check = (node: Node | null, path: string): void => {
    if (isMap(node)) {
      for (const item of node.items) check(item.value as Node | null, `${path}.${isScalar(item.key) ? String(item.key.value) : ''}`);
      return;
    }
    if (!isScalar(node) || typeof node.value !== 'number' || typeof node.source !== 'string') return;
    const at = node.range ? `${file}:${lines.linePos(node.range[0]).line}` : file;
    if (!PLAIN_DECIMAL.test(node.source)) throw new Error(`${at}: ${path}: ${node.source} is not a plain decimal (digits and an optional fraction, such as 3 or 0.3: no sign, exponent or hex)`);
    // a plain decimal YAML reads as another number: `010` is octal 8 under a `%YAML 1.1` directive (fresh-user finding)
    if (node.value !== Number(node.source)) throw new Error(`${at}: ${path}: ${node.source} is read by YAML as ${node.value}: write it without leading zeros (or drop the %YAML 1.1 line)`);
  };
  check(prices, 'gateway.prices');
}

/**
 * Refuses a key written twice in one mapping anywhere in the file (a route or a price given
 * twice would keep one of them without a word), in one pass over the file's mappings.
 * @throws Error `FILE:LINE: the key "claude-*" is given twice in one mapping (first on line 3)`.
 */
export function refuseRepeatedKeys(file: string, doc: Document, lines: LineCounter): void {
  visit(doc, {
    Map(_key, map) {
      const seen = new Map<unknown, number>();
      for (const item of map.items) {
        const key = item.key as Node | null;
        if (!isScalar(key)) continue; // a collection as a key: refused by the checks after this one
        const line = key.range ? lines.linePos(key.range[0]).line : 0;
        const first = seen.get(key.value);
        if (first !== undefined) throw new Error(`${file}:${line}: the key ${JSON.stringify(String(key.value))} is given twice in one mapping (first on line ${first})`);
        seen.set(key.value, line);
      }
    },
  });
}

/** The sections flotilla.yaml may have (an empty file or an empty section: nothing configured). */
const SECTIONS = ['gateway'];

/**
 * Refuses a file whose top level is not a mapping of known sections: a misspelled `gatway:`
 * was read as no section at all, and the server started with none of its routes and prices,
 * sending the models meant for a local server to the default provider (fresh-user finding).
 * @throws Error `FILE:LINE: unknown section "gatway" (flotilla.yaml has: gateway)`, or
 *   `FILE: the top level must be a mapping of sections (gateway:), not a list`.
 */
export function refuseUnknownSections(file: string, doc: Document, lines: LineCounter): void {
  const top = doc.contents;
  if (top === null || (isScalar(top) && (top.value === null || top.value === undefined))) return; // empty: nothing configured
  if (!isMap(top)) {
    const what = isScalar(top) ? `the ${typeof top.value} ${JSON.stringify(top.value)}` : 'a list';
    throw new Error(`${file}: the top level must be a mapping of sections (${SECTIONS.map((k) => `${k}:`).join(', ')}), not ${what}`);
  }
  for (const item of top.items) {
    const key = item.key as Node | null;
    const name = isScalar(key) ? key.value : key === null ? null : String(key);
    if (typeof name === 'string' && SECTIONS.includes(name)) continue;
    const at = key?.range ? `${file}:${lines.linePos(key.range[0]).line}` : file;
    throw new Error(`${at}: unknown section ${JSON.stringify(name === null ? '' : String(name))} (flotilla.yaml has: ${SECTIONS.join(', ')})`);
  }
}

/**
 * The line (1-based) of `path` in `doc` — of the key `key` of the mapping there when given —
 * or of the nearest enclosing node the file has (1 for none): where a message points the user.
 */
export function lineAt(doc: Document, lines: LineCounter, path: string[], key?: string): number {
  const node = doc.getIn(path, true) as Node | undefined;
  if (key !== undefined && isMap(node)) {
    const pair = node.items.find((p) => isScalar(p.key) && String(p.key.value) === key);
    const at = (pair?.key as Node | undefined)?.range;
    if (at) return lines.linePos(at[0]).line;
  }
  for (let n = path.length; n >= 0; n--) {
    const at = (doc.getIn(path.slice(0, n), true) as Node | undefined)?.range;
    if (at) return lines.linePos(at[0]).line;
  }
  return 1;
}
