/**
 * Visits every plain object of a parsed request body, depth first, down to `maxDepth` levels of
 * arrays and objects (a model request's content blocks sit a few levels down: messages →
 * content → tool_result content → block → source). `visit` returns true when it took the object
 * (an image, a document): its insides are not walked. Strings and numbers are never visited.
 * Used by input-images.ts and url-input.ts, on every call: a plain recursive loop, no allocation.
 */
export function walkObjects(v: unknown, maxDepth: number, visit: (o: Record<string, unknown>) => boolean, depth = 0): void {
  if (depth > maxDepth || v === null || typeof v !== 'object') return;
  if (Array.isArray(v)) {
    for (const x of v) if (x !== null && typeof x === 'object') walkObjects(x, maxDepth, visit, depth + 1);
    return;
  }
  const o = v as Record<string, unknown>;
  if (visit(o)) return;
  for (const k in o) {
    const x = o[k];
    if (x !== null && typeof x === 'object') walkObjects(x, maxDepth, visit, depth + 1);
  }
}
