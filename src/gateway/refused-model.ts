import { modelNameProblem } from './request.js';

/** The ledger's model for a refused call whose body named none the gateway could read. */
export const UNKNOWN_MODEL = 'unknown';

/**
 * The model a request body names, for the ledger row of a call refused for another field (e.g.
 * `max_tokens: "10"`): the body's `model` when the body is a JSON object whose `model` is a
 * string a request may give (request.ts modelNameProblem), else
 * {@link UNKNOWN_MODEL} (`raw` not JSON, not an object, or `model` missing or bad). Only on the
 * refusal path: it parses the body again.
 */
export function modelNamedIn(raw: string): string {
  let json: unknown;
  try {
    json = JSON.parse(raw);
  } catch {
    return UNKNOWN_MODEL;
  }
  const model = json !== null && typeof json === 'object' && !Array.isArray(json) ? (json as { model?: unknown }).model : undefined;
  return typeof model === 'string' && modelNameProblem(model) === null ? model : UNKNOWN_MODEL;
}
