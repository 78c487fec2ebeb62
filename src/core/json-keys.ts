import { visit } from 'jsonc-parser';

/**
 * The dotted path (`input.repo`, `items.0.name`) of the first key given twice in one object of
 * the JSON text `text`, or null. JSON.parse keeps the last of repeated keys (RFC 8259 §4: names
 * SHOULD be unique, and what a parser does with repeats is unpredictable), so `{"addUsd":1,
 * "addUsd":2}` added $2 without a word (fresh-user finding): a body that says one thing twice is
 * refused instead, as a repeated query parameter or CLI option is. Call on text JSON.parse
 * accepted (a syntax error stops the scan where it is).
 */
export function findRepeatedKey(text: string): string | null {
  const open: Array<Set<string> | null> = [];
  let found: string | null = null;
  visit(text, {
    onObjectBegin: () => void open.push(new Set()),
    onArrayBegin: () => void open.push(null),
    onObjectEnd: () => void open.pop(),
    onArrayEnd: () => void open.pop(),
    onObjectProperty: (name, _offset, _length, _line, _column, pathSupplier) => {
      const keys = open[open.length - 1];
      if (found !== null || !keys) return;
      if (keys.has(name)) found = [...pathSupplier(), name].map(String).join('.');
      else keys.add(name);
    },
  });
  return found;
}
