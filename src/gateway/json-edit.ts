import { isUtf8 } from 'node:buffer';
import { applyEdits, modify, parseTree, type Node as JsonNode } from 'jsonc-parser';
import { givenTwice } from './repeated-members.js';
import { NOT_UTF8 } from './request.js';

/**
 * `raw` (a JSON object's bytes) with each `[path, value]` set (`undefined`: the member removed),
 * as text edits (jsonc-parser `modify`): every byte outside the edited members is the client's
 * own. Re-serialising the parsed body instead changed what JSON.parse cannot hold, e.g. an
 * int64 `seed` of 9007199254740993 went upstream as ...992 (fresh-user finding).
 * @throws UneditableBodyError when `raw` is not UTF-8 or gives a member on an edited path twice.
 */
export function editJson(raw: Uint8Array, edits: ReadonlyArray<[path: string[], value: unknown]>): Buffer {
  // decoded and written back as UTF-8: other bytes would come back as U+FFFD, changed
  if (!isUtf8(raw)) throw new UneditableBodyError(NOT_UTF8, null);
  let text = Buffer.from(raw.buffer, raw.byteOffset, raw.byteLength).toString('utf8');
  const tree = parseTree(text);
  for (const [path] of edits) {
    const twice = repeatedOnPath(tree, path);
    if (twice !== null) throw new UneditableBodyError(givenTwice(twice), twice);
  }
  for (const [path, value] of edits) text = applyEdits(text, modify(text, path, value, {}));
  return Buffer.from(text);
}

/**
 * The dotted prefix of `path` whose member `root` gives twice, or null. The gateway's JSON.parse
 * read the last of them, the edit would change the first, and an upstream reading the last would
 * not see it (fresh-user finding: `"max_output_tokens":null` given twice went upstream as 32000
 * then null: no limit, and spend past the budget).
 */
function repeatedOnPath(root: JsonNode | undefined, path: readonly string[]): string | null {
  let node = root;
  for (let i = 0; i < path.length && node?.type === 'object'; i++) {
    const members = (node.children ?? []).filter((m) => m.children?.[0]?.value === path[i]);
    if (members.length > 1) return path.slice(0, i + 1).join('.');
    node = members[0]?.children?.[1];
  }
  return null;
}

/**
 * A body the gateway must edit (an output limit or stream usage to set) but cannot edit
 * faithfully: a member on the edited path given twice, or bytes that are not UTF-8. The route
 * answers 400 `invalid_request_error` with `message` (and `param`), recorded as refused
 * (`invalid_request`), nothing sent upstream.
 */
export class UneditableBodyError extends Error {
  constructor(
    message: string,
    readonly param: string | null,
  ) {
    super(message);
  }
}
