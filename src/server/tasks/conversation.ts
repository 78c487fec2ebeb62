import type { Hono } from 'hono';
import type { ConversationInput, ConversationReply, ConversationTurn, JobEvent, TaskConversation } from '../../protocol/index.js';
import type { TaskEventRow, TaskPromptRow } from '../../store/types.js';
import type { AppEnv } from '../auth.js';
import type { ServerContext } from '../context.js';
import { apiError, idError, parseId, parsePositiveInt } from '../http-util.js';
import { takesQuery } from '../query-rule.js';
import { iso } from '../views.js';
import { taskView } from './views.js';

/** Replies shown per turn: the last ones (a turn's final answer is at its end). */
const REPLIES_PER_TURN = 200;

/** A queued prompt or a recorded event → one {@link ConversationInput}; `receivers` maps receiver ids to names. */
export function inputOf(x: { prompt: TaskPromptRow } | { event: TaskEventRow }, receivers: ReadonlyMap<number, string>): ConversationInput & { order: number } {
  if ('prompt' in x) {
    const p = x.prompt;
    return { source: 'prompt', id: p.id, kind: 'prompt', actor: null, receiver: null, text: p.text, at: iso(p.createdAt), order: p.createdAt };
  }
  const e = x.event;
  return { source: 'event', id: e.id, kind: e.kind, actor: e.actor, receiver: e.receiverId === null ? null : (receivers.get(e.receiverId) ?? null), text: e.summary, at: iso(e.occurredAt), order: e.receivedAt };
}

/** Inputs in the order they reached the server (prompt time / event receipt time), without the sort key. */
function ordered(xs: Array<ConversationInput & { order: number }>): ConversationInput[] {
  return xs.sort((a, b) => a.order - b.order || (a.source === b.source ? a.id - b.id : a.source === 'event' ? -1 : 1)).map(({ order: _order, ...x }) => x);
}

/**
 * `GET /api/tasks/{id}/conversation?limit=&before=` → {@link TaskConversation}: the task's turns
 * as a conversation, oldest first: for each turn what woke it (prompts with their text, events
 * with the text the agent was shown), the job that ran it (linked, with its status) and that
 * job's `message` events in seq order (the last 200). Turns `max(1, to - limit + 1)`..`to`, where
 * `to` is `before - 1` or the task's newest turn; `limit` 1–50 (default 20). Without `before`,
 * `queued` holds what waits for the next turn; `olderBefore` pages back. Bad limit/before → 400
 * `invalid_request` naming it; unknown task → 404 `not_found`.
 */
export function mountTaskConversation(app: Hono<AppEnv>, ctx: ServerContext): void {
  app.get('/api/tasks/:id/conversation', takesQuery('limit', 'before'), async (c) => {
    const id = parseId(c.req.param('id'));
    if (id === null) return idError(c, 'id', 'a task id');
    const limitText = c.req.query('limit');
    const limit = limitText === undefined ? 20 : parsePositiveInt(limitText);
    if (limit === null || limit > 50) return apiError(c, 400, 'invalid_request', 'limit: must be an integer from 1 to 50', 'limit');
    const beforeText = c.req.query('before');
    const before = beforeText === undefined ? undefined : parseId(beforeText);
    if (before === null) return idError(c, 'before', 'a turn');
    const task = await ctx.store.getTask(id);
    if (!task) return apiError(c, 404, 'not_found', `no task ${id}`);

    const to = Math.min(task.turn, before === undefined ? task.turn : before - 1);
    const from = Math.max(1, to - limit + 1);
    const pending = before === undefined;
    const [turnJobs, inputs, receivers] = await Promise.all([
      to >= 1 ? ctx.store.listTaskTurns(id, limit, to + 1) : Promise.resolve([]),
      ctx.store.listTaskInputs(id, { fromTurn: from, toTurn: Math.max(0, to), pending }),
      ctx.store.listReceivers(),
    ]);
    const names = new Map(receivers.map((r) => [r.id, r.name]));
    const jobOf = new Map(turnJobs.filter((t) => t.turn >= from).map((t) => [t.turn, t]));
    const jobIds = [...jobOf.values()].map((t) => t.jobId);
    const [messages, jobs] = await Promise.all([ctx.store.listJobMessages(jobIds, 5_000), Promise.all(jobIds.map((j) => ctx.store.getJob(j)))]);
    const statusOf = new Map(jobs.filter((j) => j !== null).map((j) => [j.id, j.status]));
    const said = new Map<number, JobEvent[]>();
    for (const m of messages) {
      const list = said.get(m.jobId) ?? [];
      list.push(m);
      said.set(m.jobId, list);
    }

    const byTurn = new Map<number | null, Array<ConversationInput & { order: number }>>();
    const add = (turn: number | null, x: ConversationInput & { order: number }) => {
      const list = byTurn.get(turn) ?? [];
      list.push(x);
      byTurn.set(turn, list);
    };
    for (const p of inputs.prompts) add(p.turn, inputOf({ prompt: p }, names));
    for (const e of inputs.events) add(e.turn, inputOf({ event: e }, names));

    const turns: ConversationTurn[] = [];
    for (let n = from; n <= to; n++) {
      const tj = jobOf.get(n);
      const all = tj ? (said.get(tj.jobId) ?? []) : [];
      const replies: ConversationReply[] = all.slice(-REPLIES_PER_TURN).flatMap((m) => (m.type === 'message' ? [{ seq: m.seq, role: m.data.role, text: m.data.text, at: m.at }] : []));
      turns.push({
        turn: n,
        jobId: tj?.jobId ?? null,
        jobStatus: tj ? (statusOf.get(tj.jobId) ?? null) : null,
        startedAt: tj ? iso(tj.createdAt) : null,
        inputs: ordered(byTurn.get(n) ?? []),
        replies,
        repliesTruncated: all.length > REPLIES_PER_TURN,
      });
    }
    const body: TaskConversation = { task: taskView(task), turns, queued: pending ? ordered(byTurn.get(null) ?? []) : [], olderBefore: from > 1 ? from : null };
    return c.json(body);
  });
}
