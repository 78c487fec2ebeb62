import { readEmptyBody } from '../routes/empty-body.js';
import type { Context, Hono } from 'hono';
import { CreateTaskRequest, DEFAULT_COALESCE_SECONDS, SendTaskPromptRequest, TaskBudgetRequest, TaskStatus, type TaskDetail } from '../../protocol/index.js';
import { usdToMicros } from '../../core/money.js';
import type { TaskRow } from '../../store/types.js';
import { isTerminal } from '../../core/job-state.js';
import type { AppEnv } from '../auth.js';
import type { ServerContext } from '../context.js';
import { apiError, idError, parseId, parsePositiveInt, readBody } from '../http-util.js';
import { takesQuery } from '../query-rule.js';
import type { TaskEngine } from './engine.js';
import { TASK_INPUT_FIELDS, taskInputProblem } from './task-input.js';
import { taskEventView, taskView } from './views.js';
import { topUpTask } from './task-budget.js';

type Found = { ok: true; task: TaskRow; engine: TaskEngine } | { ok: false; response: Response };

async function findTask(c: Context<AppEnv>, ctx: ServerContext): Promise<Found> {
  const id = parseId(c.req.param('id'));
  if (id === null) return { ok: false, response: idError(c, 'id', 'a task id') };
  if (!ctx.tasks) return { ok: false, response: apiError(c, 503, 'unavailable', 'tasks are not running on this server') };
  const task = await ctx.store.getTask(id);
  if (!task) return { ok: false, response: apiError(c, 404, 'not_found', `no task ${id}`) };
  return { ok: true, task, engine: ctx.tasks };
}

/**
 * Tasks API (issue 7):
 * - `GET /api/tasks?status=&limit=&before=` → TaskList (newest first, limit 1..200, default 50);
 * - `POST /api/tasks` (CreateTaskRequest) → 201 Task (window: request, else the agent's `coalesceSeconds`, else 180 s); unknown agent 404 `unknown_agent`, an agent whose inputSchema refuses the input plus
 *   taskPrompt/taskId/taskTurn 422 `invalid_input` (nothing stored), a key
 *   owned by another active task 409 `key_taken`; with `prompt` it wakes at once;
 * - `GET /api/tasks/:id` → TaskDetail (task + its 50 newest events);
 * - `POST /api/tasks/:id/send` ({prompt}) → Task: queued for the next turn (now when idle);
 * - `POST /api/tasks/:id/suspend` → Task: no wakes until resumed (the running turn finishes;
 *   events and prompts keep queueing; the runner slot kept for its idle time is released at once); completed → 409 `invalid_state`;
 * - `POST /api/tasks/:id/resume` → Task: suspended → idle; workspace_lost → idle with a fresh
 *   workspace and session; then wakes when something is pending;
 * - `POST /api/tasks/:id/stop` → Task: cancels the current turn's job only (the task reads
 *   `running` until its runner reports the job ended); no turn running → 409 `invalid_state`;
 * - `POST /api/tasks/:id/complete` → Task: completed, keys released, its job cancelled;
 * - `POST /api/tasks/:id/budget` (TaskBudgetRequest) → TaskBudgetResult (the task, `resumed`: the jobs resumed): `addUsd` adds to the task's budget
 *   and to the running turn's tree (a turn paused for budget resumes; with no turn running, a
 *   turn held back by the spent budget starts: task-budget.ts topUpTask); a task without a
 *   budget 409 `no_budget`, past $100,000 400 naming `addUsd`. `budgetUsd` sets the budget,
 *   between turns only (a turn running: 409 `invalid_state`), and wakes the task.
 * A task's budget (CreateTaskRequest `budgetUsd`, else its agent's `limits.taskBudgetUsd`, else
 * none) covers all its turns: each turn's tree gets what is left of it (task-budget.ts).
 */
export function mountTasks(app: Hono<AppEnv>, ctx: ServerContext): void {
  app.get('/api/tasks', takesQuery('status', 'limit', 'before'), async (c) => {
    const status = c.req.query('status');
    if (status !== undefined && !TaskStatus.safeParse(status).success) return apiError(c, 400, 'invalid_request', `status: must be one of ${TaskStatus.options.join(', ')}`, 'status');
    const limitText = c.req.query('limit');
    const limit = limitText === undefined ? 50 : parsePositiveInt(limitText);
    if (limit === null || limit > 200) return apiError(c, 400, 'invalid_request', 'limit: must be an integer from 1 to 200', 'limit');
    const beforeText = c.req.query('before');
    const before = beforeText === undefined ? undefined : parseId(beforeText);
    if (before === null) return idError(c, 'before', 'a task id');
    const rows = await ctx.store.listTasks({ limit, ...(status ? { status: status as TaskStatus } : {}), ...(before ? { before } : {}) });
    return c.json({ tasks: rows.map(taskView) });
  });

  app.post('/api/tasks', async (c) => {
    const body = await readBody(c, CreateTaskRequest);
    if (!body.ok) return body.response;
    const req = body.value;
    if (!ctx.tasks) return apiError(c, 503, 'unavailable', 'tasks are not running on this server');
    const agent = ctx.agents.get(req.agent);
    if (!agent) return apiError(c, 404, 'unknown_agent', `unknown agent ${JSON.stringify(req.agent)}`, 'agent');
    // every turn sets these (engine.ts wake): a value given here would be overwritten unseen
    const reserved = TASK_INPUT_FIELDS.find((f) => req.input !== undefined && Object.hasOwn(req.input, f));
    if (reserved) return apiError(c, 400, 'invalid_request', `input.${reserved}: set by every turn of the task (taskPrompt, taskId, taskTurn); leave it out of the task's input`, `input.${reserved}`);
    const unfit = taskInputProblem(ctx.agents, agent.name, req.input);
    if (unfit) return apiError(c, 422, 'invalid_input', unfit, 'agent');
    const now = ctx.now();
    let task: TaskRow;
    try {
      const budgetUsd = req.budgetUsd ?? agent.limits.taskBudgetUsd;
      task = await ctx.store.createTask({
        agent: agent.name,
        title: req.title,
        input: req.input,
        keys: req.keys,
        coalesceMs: (req.coalesceSeconds ?? agent.coalesceSeconds ?? DEFAULT_COALESCE_SECONDS) * 1000,
        budgetMicros: budgetUsd === undefined ? null : usdToMicros(budgetUsd),
        now,
      });
    } catch (err) {
      const msg = (err as Error).message;
      if (/is owned by task/.test(msg)) return apiError(c, 409, 'key_taken', msg.replace(/^store: /, ''), 'keys');
      throw err;
    }
    if (req.prompt) {
      await ctx.store.enqueueTaskPrompt(task.id, req.prompt, now);
      await ctx.tasks.wake(task.id);
    }
    ctx.log.info('task created', { taskId: task.id, agent: task.agent });
    return c.json(taskView((await ctx.store.getTask(task.id))!), 201);
  });

  app.get('/api/tasks/:id', async (c) => {
    const f = await findTask(c, ctx);
    if (!f.ok) return f.response;
    const names = new Map((await ctx.store.listReceivers()).map((r) => [r.id, r.name]));
    const events = await ctx.store.listTaskEvents(f.task.id, 50);
    const runner = f.task.runnerId !== null ? await ctx.store.getRunner(f.task.runnerId) : null;
    const detail: TaskDetail = { task: taskView(f.task), events: events.map((e) => taskEventView(e, names)), runnerName: runner?.name ?? null };
    return c.json(detail);
  });

  app.post('/api/tasks/:id/send', async (c) => {
    const body = await readBody(c, SendTaskPromptRequest);
    if (!body.ok) return body.response;
    const f = await findTask(c, ctx);
    if (!f.ok) return f.response;
    if (f.task.status === 'completed') return apiError(c, 409, 'invalid_state', `task ${f.task.id} is completed: resume it first`);
    await ctx.store.enqueueTaskPrompt(f.task.id, body.value.prompt, ctx.now());
    await f.engine.wake(f.task.id);
    return c.json(taskView((await ctx.store.getTask(f.task.id))!));
  });

  app.post('/api/tasks/:id/suspend', async (c) => {
    const f = await findTask(c, ctx);
    if (!f.ok) return f.response;
    const body = await readEmptyBody(c);
    if (!body.ok) return body.response;
    const t = await ctx.store.updateTask(f.task.id, ['idle', 'running', 'suspended', 'workspace_lost'], { status: 'suspended', slotUntil: null }, ctx.now());
    if (!t) return apiError(c, 409, 'invalid_state', `task ${f.task.id} is ${f.task.status}: only an active task can be suspended`);
    ctx.dispatcher.kick(); // its runner slot is free now
    return c.json(taskView(t));
  });

  app.post('/api/tasks/:id/resume', async (c) => {
    const f = await findTask(c, ctx);
    if (!f.ok) return f.response;
    const body = await readEmptyBody(c);
    if (!body.ok) return body.response;
    const now = ctx.now();
    let t: TaskRow | null = null;
    if (f.task.status === 'suspended') t = await ctx.store.updateTask(f.task.id, ['suspended'], { status: f.task.currentJobId ? 'running' : 'idle' }, now);
    else if (f.task.status === 'workspace_lost') t = await ctx.store.updateTask(f.task.id, ['workspace_lost'], { status: 'idle', error: null, sessionId: null, runnerId: null, workspaceJobId: null }, now);
    else if (f.task.status === 'completed') t = await ctx.store.reopenTask(f.task.id, now).catch(() => null);
    if (!t) return apiError(c, 409, 'invalid_state', `task ${f.task.id} is ${f.task.status}: nothing to resume (or a key of it is now owned by another task)`);
    await f.engine.wake(t.id);
    return c.json(taskView((await ctx.store.getTask(t.id))!));
  });

  app.post('/api/tasks/:id/stop', async (c) => {
    const f = await findTask(c, ctx);
    if (!f.ok) return f.response;
    const body = await readEmptyBody(c);
    if (!body.ok) return body.response;
    // Nothing to interrupt is an error, as suspending a completed task is (it answered 200 with the task as it was).
    const turn = f.task.currentJobId ? await ctx.store.getJob(f.task.currentJobId) : null;
    if (!turn || isTerminal(turn.status)) return apiError(c, 409, 'invalid_state', `task ${f.task.id} is ${f.task.status}: no turn is running to stop`);
    await f.engine.stopTurn(f.task.id);
    return c.json(taskView((await ctx.store.getTask(f.task.id))!));
  });

  app.post('/api/tasks/:id/complete', async (c) => {
    const f = await findTask(c, ctx);
    if (!f.ok) return f.response;
    const body = await readEmptyBody(c);
    if (!body.ok) return body.response;
    const t = await f.engine.complete(f.task.id, `task ${f.task.id} completed by request`);
    if (!t) return apiError(c, 409, 'invalid_state', `task ${f.task.id} is already completed`);
    return c.json(taskView(t));
  });

  app.post('/api/tasks/:id/budget', async (c) => {
    const body = await readBody(c, TaskBudgetRequest);
    if (!body.ok) return body.response;
    const f = await findTask(c, ctx);
    if (!f.ok) return f.response;
    if (body.value.addUsd !== undefined) {
      const r = await topUpTask(ctx, f.task, usdToMicros(body.value.addUsd));
      if (!r.ok) return apiError(c, r.status, r.code, r.message, r.code === 'invalid_request' ? 'addUsd' : undefined);
      return c.json({ ...taskView(r.task), resumed: r.resumed });
    }
    // Set: between turns only; the running turn's tree was sized from the budget it started with.
    const turn = f.task.currentJobId ? await ctx.store.getJob(f.task.currentJobId) : null;
    if (turn && !isTerminal(turn.status))
      return apiError(c, 409, 'invalid_state', `task ${f.task.id}'s turn (job ${turn.id}) is ${turn.status}: a budget is set between turns; add to it with flotilla tasks budget ${f.task.id} --add <USD>`);
    const t = await ctx.store.updateTask(f.task.id, null, { budgetMicros: usdToMicros(body.value.budgetUsd!) }, ctx.now());
    if (!t) return apiError(c, 404, 'not_found', `no task ${f.task.id}`);
    ctx.log.info('task budget set', { taskId: t.id, budgetMicros: t.budgetMicros });
    await f.engine.wake(t.id);
    return c.json({ ...taskView((await ctx.store.getTask(t.id)) ?? t), resumed: [] });
  });
}
