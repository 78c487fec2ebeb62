import { jsonNumber, jsonString } from '../core/json-text.js';
import type { NewModelCall, PendingCall } from './types.js';

/**
 * The call a budget reservation is for (H7), kept on its `budget_reservations.call` column as
 * JSON (migration 0020), and the ledger row the sweep writes from it when the call was never
 * settled: its gateway died mid-call, and the upstream probably billed it.
 */

const isCount = (v: unknown, min = 0): v is number => typeof v === 'number' && Number.isSafeInteger(v) && v >= min;
const isText = (v: unknown): v is string => typeof v === 'string' && v.length > 0 && v.length <= 256 && !v.includes('\0');

/**
 * `call` as the reservation row's JSON (only PendingCall's fields, in this order; the text
 * JSON.stringify would write, built by hand: it is on every call's way to the upstream), or
 * null without one.
 */
export function encodePendingCall(call: PendingCall | undefined): string | null {
  if (!call) return null;
  const { jobId, attempt, provider, model, api, streamed, inputTokens, outputTokens, webSearchRequests } = call;
  const runnerId = call.runnerId ?? null;
  if (typeof jobId !== 'number' || typeof attempt !== 'number' || typeof provider !== 'string' || typeof model !== 'string' || typeof api !== 'string' || typeof streamed !== 'boolean' || typeof inputTokens !== 'number' || typeof outputTokens !== 'number' || (runnerId !== null && typeof runnerId !== 'number')) {
    // not the shape the gateway gives: as JSON.stringify writes it (it leaves out what is undefined)
    const c: PendingCall = { jobId, attempt, provider, model, api, streamed, runnerId, inputTokens, outputTokens };
    if (webSearchRequests) c.webSearchRequests = webSearchRequests;
    return JSON.stringify(c);
  }
  const searches = webSearchRequests ? `,"webSearchRequests":${typeof webSearchRequests === 'number' ? jsonNumber(webSearchRequests) : JSON.stringify(webSearchRequests)}` : '';
  return (
    `{"jobId":${jsonNumber(jobId)},"attempt":${jsonNumber(attempt)},"provider":${jsonString(provider)},"model":${jsonString(model)},"api":${jsonString(api)},` +
    `"streamed":${streamed},"runnerId":${runnerId === null ? 'null' : jsonNumber(runnerId)},"inputTokens":${jsonNumber(inputTokens)},"outputTokens":${jsonNumber(outputTokens)}${searches}}`
  );
}

/** The reservation row's JSON back as a PendingCall, or null when absent or not one (a row from before 0020). */
export function decodePendingCall(json: string | null | undefined): PendingCall | null {
  if (!json) return null;
  let v: Record<string, unknown>;
  try {
    v = JSON.parse(json) as Record<string, unknown>;
  } catch {
    return null;
  }
  if (v === null || typeof v !== 'object') return null;
  if (!isCount(v.jobId, 1) || !isCount(v.attempt) || !isText(v.provider) || !isText(v.model) || !isText(v.api) || typeof v.streamed !== 'boolean') return null;
  if (!isCount(v.inputTokens) || !isCount(v.outputTokens)) return null;
  const runnerId = isCount(v.runnerId, 1) ? v.runnerId : null;
  const c: PendingCall = { jobId: v.jobId, attempt: v.attempt, provider: v.provider, model: v.model, api: v.api, streamed: v.streamed, runnerId, inputTokens: v.inputTokens, outputTokens: v.outputTokens };
  if (isCount(v.webSearchRequests, 1)) c.webSearchRequests = v.webSearchRequests;
  return c;
}

/**
 * The ledger row of a reservation the sweep charges (H7): usage unknown (`usageKnown: false`),
 * HTTP status 0 (no reply was seen), charged `micros` (the reserved worst case: the call may
 * have used all of it, and the design rule is that unknown usage is never $0), tokens the worst
 * case's (`call`'s), started at the reservation's `createdAt`, lasting until the sweep (`now`;
 * epoch ms). Without `call` (a reservation from before 0020): recorded on the tree's root job,
 * attempt 0, provider/model/api `unknown`, no tokens.
 */
export function sweptCallRow(call: PendingCall | null, rootId: number, micros: number, createdAt: number, now: number): NewModelCall {
  const row: NewModelCall = {
    jobId: call?.jobId ?? rootId,
    attempt: call?.attempt ?? 0,
    provider: call?.provider ?? 'unknown',
    model: call?.model ?? 'unknown',
    api: call?.api ?? 'unknown',
    streamed: call?.streamed ?? false,
    httpStatus: 0,
    inputTokens: call?.inputTokens ?? 0,
    outputTokens: call?.outputTokens ?? 0,
    cacheReadTokens: 0,
    cacheWriteTokens: 0,
    usageKnown: false,
    costMicros: micros,
    costNanos: micros * 1000,
    runnerId: call?.runnerId ?? null,
    startedAt: createdAt,
    durationMs: Math.max(0, now - createdAt),
  };
  if (call?.webSearchRequests) row.webSearchRequests = call.webSearchRequests;
  return row;
}
