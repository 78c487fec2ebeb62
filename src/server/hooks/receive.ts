import { usdToMicros } from '../../core/money.js';
import { isUtf8 } from 'node:buffer';
import { createHash } from 'node:crypto';
import { parseJsonBounded, replaceNul } from '../../core/json-depth.js';
import { CreateReceiverRequest, DEFAULT_COALESCE_SECONDS, oneLine, type ApiErrorBody, type HookResult } from '../../protocol/index.js';
import type { NewDelivery, ReceiverRow, TaskRow } from '../../store/types.js';
import type { ServerContext } from '../context.js';
import { evalCelString } from './cel-route.js';
import { cachedReceiver } from './receiver-cache.js';
import { ingestBatcher } from './ingest-batcher.js';
import { routeForgeEvent, type RoutedEvent } from './forge-route.js';
import { GITHUB_EVENTS } from './github-events.js';
import { checkBearer, checkGenericHmac, checkGiteaSignature, checkGithubSignature } from './verify.js';

/** Longest resource key a delivery may route to, in characters (the same cap as a task's keys: ResourceKey in protocol/task.ts). */
export const MAX_RESOURCE_KEY_CHARS = 1000;

/** Largest webhook body read, bytes (GitHub caps payloads at 25 MB; issue events are far smaller). 5 MiB. */
export const MAX_HOOK_BODY_BYTES = 5 * 1024 * 1024;

const PROVIDERS = new Set(['github', 'gitea', 'generic']);
/** Body text for JSON.parse (not fatal: a GitHub body that is not UTF-8 was refused before; Gitea and generic ones keep U+FFFD). */
const utf8 = new TextDecoder();
/** The rule receivers' names are created under (CreateReceiverRequest in protocol/task.ts): a name outside it names no receiver. */
const RECEIVER_NAME = CreateReceiverRequest.shape.name;
/** Names that passed {@link RECEIVER_NAME} (a few receivers get every delivery: zod's parse was a few µs of each). Bounded. */
const goodNames = new Set<string>();

/**
 * Without a delivery id header (a generic sender such as Alertmanager has none), how long the
 * same body counts as the same delivery, ms (10 min): a sender's retries of one request are
 * stored once, while the same body sent again later (an alert firing again, a `deploy done`
 * hook that never varies) is a new event. The id was the body's SHA-256 alone, which ignored
 * every later identical event for good.
 */
export const BODY_DEDUP_WINDOW_MS = 10 * 60_000;

/** `sha256:<hex of the body>:<window number>`: one id per body per {@link BODY_DEDUP_WINDOW_MS} slot of the clock (now: epoch ms). */
export function bodyDeliveryId(raw: Uint8Array, now: number): string {
  return `sha256:${createHash('sha256').update(raw).digest('hex')}:${Math.floor(now / BODY_DEDUP_WINDOW_MS)}`;
}

/** One webhook request as the transport read it: path parts, lower-case headers, the RAW body bytes. */
export interface HookRequest {
  /** `github`, `gitea` or `generic` (anything else → 404). */
  provider: string;
  /** The receiver's name from the path. */
  receiver: string;
  /** Request headers, names lower-case (duplicates joined with ", "). */
  headers: Record<string, string>;
  /** The body exactly as received (at most {@link MAX_HOOK_BODY_BYTES}: the transport answers 413 past it). */
  raw: Uint8Array;
}

/** What to answer: an HTTP status and its JSON body ({@link HookResult} or an API error body). */
export interface HookReply {
  status: number;
  body: HookResult | ApiErrorBody;
}

const fail = (status: number, code: string, message: string, field?: string): HookReply => ({ status, body: { error: { code, message, ...(field ? { field } : {}) } } });
const ok = (body: HookResult): HookReply => ({ status: 200, body });

/**
 * `POST /hooks/{github|gitea|generic}/:receiver` (issue 7), outside the /api token check (each
 * delivery carries its own auth), served on plain node:http (hooks-node.ts). In order, and
 * nothing is stored until all pass: no `%00` in the URL (400 `invalid_request`, by the
 * transport); body ≤ {@link MAX_HOOK_BODY_BYTES} (413 `payload_too_large`, by the transport);
 * a known provider (404 `not_found`); a name receivers may have (400 `invalid_request`, the
 * rule of CreateReceiverRequest; no store query); the receiver exists with this provider (404
 * `not_found`: the provider comes from its configuration, never from headers); the signature
 * or token over the RAW bytes (401 `bad_signature`); for GitHub a UTF-8 body (400
 * `invalid_json`); a JSON object body (400 `invalid_json`); a delivery id (`X-GitHub-Delivery`,
 * `X-Gitea-Delivery`, `X-Delivery-Id`, else the body's SHA-256 within a 10-minute slot,
 * {@link bodyDeliveryId}; no NUL); for forges an event
 * header (`ping` → 200 `ignored`; for GitHub a name not in {@link GITHUB_EVENTS} → 200
 * `ignored` with `reason`, nothing stored); a routed key ≤ {@link MAX_RESOURCE_KEY_CHARS}
 * chars (422 `invalid_request`). Then
 * one transaction stores the delivery (a repeat → 200 `duplicate` with the task the first one
 * went to) and its event, and notes it on the task's coalescing window (concurrent deliveries
 * share a transaction: ingest-batcher.ts; the receiver row is cached 2 s: receiver-cache.ts),
 * and the policies run. The answer comes only after that transaction committed. Answers 200
 * {@link HookResult}.
 * @throws what the store throws (the transport answers 500).
 */
export async function receiveDelivery(ctx: ServerContext, req: HookRequest): Promise<HookReply> {
  const { provider, receiver: name, headers, raw } = req;
  if (!PROVIDERS.has(provider)) return fail(404, 'not_found', `no hook provider ${JSON.stringify(provider)} (github, gitea, generic)`);
  // Before the store lookup: a name no receiver can have (NUL would even fail the PostgreSQL
  // query: a 500) is answered the same on both engines, with the rule the API creates under.
  if (!goodNames.has(name)) {
    const shape = RECEIVER_NAME.safeParse(name);
    if (!shape.success) return fail(400, 'invalid_request', name.includes('\0') ? 'the URL must not contain NUL (%00)' : (shape.error.issues[0]?.message ?? 'not a receiver name'));
    if (goodNames.size >= 1000) goodNames.clear();
    goodNames.add(name);
  }
  const found = await cachedReceiver(ctx.store, name, ctx.now());
  if (!found || found.receiver.provider !== provider) return fail(404, 'not_found', `no ${provider} receiver ${JSON.stringify(name)}`);
  const { receiver, secret, tokenHash } = found;
  const bad = checkAuth(headers, receiver, secret, tokenHash, raw);
  if (bad) {
    ctx.log.warn('webhook refused', { receiver: name, reason: bad });
    return fail(401, 'bad_signature', `delivery refused: ${bad}`);
  }
  // After the signature verdict (a sender with the right secret must not be told it is wrong):
  // GitHub sends JSON as UTF-8 (RFC 8259 §8.1), so other bytes are a broken body, not a forgery.
  if (provider === 'github' && !isUtf8(raw)) return fail(400, 'invalid_json', 'webhook body is not valid UTF-8 (JSON text must be UTF-8: RFC 8259 §8.1)');
  let payload: unknown;
  try {
    const text = utf8.decode(raw);
    payload = parseJsonBounded(text);
    // PostgreSQL text cannot hold NUL; a forge's payload is kept with U+FFFD in its place.
    if (text.includes('\\u0000')) payload = replaceNul(payload);
  } catch (err) {
    return fail(400, 'invalid_json', `webhook body must be a JSON document${err instanceof RangeError ? ` (${err.message})` : ''}`);
  }
  if (payload === null || typeof payload !== 'object' || Array.isArray(payload)) return fail(400, 'invalid_json', 'webhook body must be a JSON object');
  // Forges always send their delivery id (GitHub X-GitHub-Delivery, Gitea X-Gitea-Delivery,
  // Forgejo X-Forgejo-Delivery); without it a redelivery could not be told from a new event.
  if (provider === 'github' && !headers['x-github-delivery']) return fail(400, 'invalid_request', 'missing X-GitHub-Delivery header (GitHub sends one with every delivery)');
  if (provider === 'gitea' && !headers['x-gitea-delivery'] && !headers['x-forgejo-delivery']) return fail(400, 'invalid_request', 'missing X-Gitea-Delivery (or X-Forgejo-Delivery) header');
  const now = ctx.now();
  const deliveryId = headers['x-github-delivery'] ?? headers['x-gitea-delivery'] ?? headers['x-forgejo-delivery'] ?? headers['x-delivery-id'] ?? bodyDeliveryId(raw, now);
  if (deliveryId.length === 0 || deliveryId.length > 200) return fail(400, 'invalid_request', 'delivery id header must be 1 to 200 characters');
  // node:http already refuses NUL in a header (400 before we run); kept for any other caller, as
  // PostgreSQL text cannot hold it. The event header is checked below.
  if (deliveryId.includes('\0')) return fail(400, 'invalid_request', 'delivery id header must not contain NUL');

  let routed: RoutedEvent;
  if (provider === 'generic') {
    const key = receiver.keyExpr ? celText(evalCelString(receiver.keyExpr, { payload, headers })) : { value: null, error: 'no keyExpr' };
    // The event goes on unmatched (fallback task); the reason (e.g. the CEL time budget ran out) is for the operator.
    if (key.error) ctx.log.warn('webhook keyExpr gave no resource key', { receiver: name, reason: key.error });
    const summary = receiver.summaryExpr ? celText(evalCelString(receiver.summaryExpr, { payload, headers })).value : null;
    const p = payload as Record<string, unknown>;
    routed = {
      key: key.value,
      kind: typeof p.status === 'string' ? `alert.${p.status}` : 'event',
      actor: null,
      summary: summary ?? JSON.stringify(payload).slice(0, 20_000),
      occurredAt: now,
      action: null,
      assignees: [],
      title: key.value ?? 'event',
    };
  } else {
    const event = headers['x-github-event'] ?? headers['x-gitea-event'] ?? headers['x-forgejo-event'];
    if (!event) return fail(400, 'invalid_request', `missing event header (${provider === 'github' ? 'X-GitHub-Event' : 'X-Gitea-Event'})`);
    if (event === 'ping') return ok({ outcome: 'ignored', taskId: null, key: null });
    // 2xx so GitHub does not retry; nothing stored, so the delivery id is not taken either.
    if (provider === 'github' && !GITHUB_EVENTS.has(event))
      return ok({ outcome: 'ignored', taskId: null, key: null, reason: `X-GitHub-Event ${JSON.stringify(event.length > 100 ? `${event.slice(0, 100)}…` : event)} is not a GitHub webhook event (docs.github.com, "Webhook events and payloads"); nothing was stored` });
    if (event.includes('\0')) return fail(400, 'invalid_request', 'event header must not contain NUL');
    routed = routeForgeEvent(event, payload as Record<string, unknown>, now);
  }

  // Keys are capped like a task's keys (ResourceKey, 1000 chars): refuse before storing anything, and never echo the huge key.
  if (routed.key !== null && routed.key.length > MAX_RESOURCE_KEY_CHARS)
    return fail(422, 'invalid_request', `key: the routed resource key is ${routed.key.length} characters; keys are at most ${MAX_RESOURCE_KEY_CHARS} (check the receiver's keyExpr)`, 'key');
  const pol = receiver.policies;
  const assign = pol.assign && routed.action === 'assigned' && routed.assignees.includes(pol.assign.login) ? pol.assign : null;
  const assignAgent = assign ? ctx.agents.get(assign.agent) : undefined;
  if (assign && !assignAgent) ctx.log.warn('assign policy names an agent that is not loaded', { receiver: name, agent: assign.agent });
  const delivery: NewDelivery = {
    receiverId: receiver.id,
    deliveryId,
    event: { receiverId: receiver.id, key: routed.key, kind: routed.kind, actor: routed.actor, summary: routed.summary, occurredAt: routed.occurredAt },
    ...(assign && assignAgent
      ? {
          createTask: {
            agent: assignAgent.name,
            // the forge's issue title, one line (a listing shows it; the API refuses control characters)
            title: oneLine(routed.title),
            input: {},
            keys: [],
            coalesceMs: (assign.coalesceSeconds ?? assignAgent.coalesceSeconds ?? DEFAULT_COALESCE_SECONDS) * 1000,
            // its agent's budget per task (issue 3), else none (each turn its defaultBudgetUsd)
            budgetMicros: assignAgent.limits.taskBudgetUsd === undefined ? null : usdToMicros(assignAgent.limits.taskBudgetUsd),
          },
        }
      : {}),
    includeCompleted: routed.action === 'reopened' && pol.wakeOnReopen,
    fallbackTaskId: receiver.fallbackTaskId,
    // Close/reopen decide after reading the task (complete, reopen); the rest is noted on the
    // window in the ingest transaction (a stale action other than assign moves nothing).
    ...(ctx.tasks && routed.action !== 'closed' && routed.action !== 'reopened' ? { coalesce: routed.action === null || routed.action === 'assigned' ? 'always' : 'unless_stale' } : {}),
    now,
  };
  let res = await ingestBatcher(ctx.store).ingest(delivery).catch((err: Error) => err);
  // Two deliveries creating a task for one key at once: the loser sees the winner's task.
  if (res instanceof Error && delivery.createTask) res = await ctx.store.ingestDelivery(delivery);
  if (res instanceof Error) throw res;
  // A repeat answers the task the first delivery went to (0015), doing nothing else.
  if (res.duplicate) return ok({ outcome: 'duplicate', taskId: res.taskId, key: routed.key });
  const reply = (outcome: HookResult['outcome'], task: TaskRow | null) => ok({ outcome, taskId: task?.id ?? null, key: routed.key });
  const task = res.task;
  if (!task) return reply('unmatched', null);
  if (!ctx.tasks) return reply('recorded', task);
  // A stale event (older than what the task saw) is shown to the agent but never moves the task: no close or reopen.
  if (res.stale && routed.action !== null && routed.action !== 'assigned') return reply('recorded', task);
  if (res.window !== undefined) {
    const w = res.window;
    if (w === null) return reply(res.created ? 'created' : 'queued', task);
    if (w.decision === 'coalesced') {
      ctx.tasks.armTrailing(task.id, w.trailingDueAt);
      return reply(res.created ? 'created' : 'coalesced', task);
    }
    const job = await ctx.tasks.wake(task.id);
    return reply(res.created ? 'created' : job ? 'woke' : 'queued', task);
  }
  const owns = routed.key !== null && task.keys.includes(routed.key);
  if (routed.action === 'closed' && pol.completeOnClose && owns) {
    await ctx.tasks.complete(task.id, `task ${task.id}: ${routed.key} was closed`);
    return reply('completed', task);
  }
  let status = task.status;
  if (routed.action === 'reopened' && pol.wakeOnReopen && task.status === 'completed') status = (await ctx.store.reopenTask(task.id, now).catch(() => null))?.status ?? status;
  const outcome = await ctx.tasks.onEvent(task.id, { status });
  return reply(res.created ? 'created' : outcome, task);
}

/**
 * A CEL result with any NUL (an expression's string escape such as `"\x00"`: the payload's own
 * NULs are already U+FFFD) as U+FFFD, as the payload is: PostgreSQL text cannot hold NUL (a 500
 * on every delivery there; SQLite stored it).
 */
function celText<T extends { value: string | null }>(r: T): T {
  return r.value !== null && r.value.includes('\0') ? { ...r, value: r.value.replaceAll('\0', '\uFFFD') } : r;
}

function checkAuth(headers: Record<string, string>, r: ReceiverRow, secret: string | null, tokenHash: string | null, raw: Uint8Array): string | null {
  if (r.provider === 'github') return secret ? checkGithubSignature(secret, raw, headers['x-hub-signature-256']) : 'receiver has no secret';
  if (r.provider === 'gitea') return secret ? checkGiteaSignature(secret, raw, headers['x-gitea-signature'] ?? headers['x-forgejo-signature']) : 'receiver has no secret';
  if (r.auth === 'bearer') return tokenHash ? checkBearer(tokenHash, headers['authorization']) : 'receiver has no token';
  return secret ? checkGenericHmac(secret, raw, headers['x-signature-256'] ?? headers['x-hub-signature-256']) : 'receiver has no secret';
}
