import type { Hono } from 'hono';
import { MAX_ID, type JobEvent } from '../../protocol/index.js';
import { isTerminal } from '../../core/job-state.js';
import type { AppEnv } from '../auth.js';
import type { ServerContext } from '../context.js';
import { apiError, idError, parseId } from '../http-util.js';
import { takesQuery } from '../query-rule.js';
import { credentialCheck } from '../stream-auth.js';

const PAGE = 500;

/** Formats one job event as an SSE message (`id: <seq>`, `event: job`, JSON data). */
export function sseJobEvent(ev: JobEvent): string {
  return `id: ${ev.seq}\nevent: job\ndata: ${JSON.stringify(ev)}\n\n`;
}

/**
 * `GET /api/jobs/:id/events` (SSE). Replays the job's events after `Last-Event-ID` (header)
 * or `?after=` (a seq), then follows new ones, woken by the in-process bus and by a store
 * poll every `ctx.sse.pollMs` (events stored by other replicas). When the job is terminal
 * and every event is sent: `event: end` / `data: {"status": "<status>"}`, then the stream
 * closes. A `: ping` comment every `ctx.sse.heartbeatMs` keeps idle streams open. When the
 * caller's API token is revoked or its session ends (checked again every 2 s, stream-auth.ts):
 * `event: error` / `data: {"code":"unauthorized","message":...}`, then the stream closes.
 * Bad id/cursor (outside 1..2147483647 / 0..2147483647) → 400 `invalid_request`; unknown job → 404 `not_found`.
 */
export function mountJobEvents(app: Hono<AppEnv>, ctx: ServerContext): void {
  app.get('/api/jobs/:id/events', takesQuery('after'), async (c) => {
    const id = parseId(c.req.param('id'));
    if (id === null) return idError(c, 'id', 'a job id');
    const cursorText = c.req.header('last-event-id') ?? c.req.query('after');
    let after = 0;
    if (cursorText !== undefined && cursorText !== '') {
      // 0 (from the start) too; at most MAX_ID, the largest seq the store can hold (protocol/ids.ts).
      if (!/^[0-9]{1,15}$/.test(cursorText.trim()) || Number(cursorText.trim()) > MAX_ID) {
        return apiError(c, 400, 'invalid_request', `Last-Event-ID / after: must be an integer from 0 to ${MAX_ID} (an event seq)`, 'after');
      }
      after = Number(cursorText.trim());
    }
    if (!(await ctx.store.getJob(id))) return apiError(c, 404, 'not_found', `no job ${id}`);

    const enc = new TextEncoder();
    let closed = false;
    let wake: (() => void) | null = null;
    let dirty = false;
    const signal = () => {
      dirty = true;
      const w = wake;
      wake = null;
      w?.();
    };
    const unsubscribe = ctx.bus.subscribe(id, signal);
    let controllerRef: ReadableStreamDefaultController<Uint8Array> | null = null;
    const write = (text: string) => {
      if (closed || !controllerRef) return;
      try {
        controllerRef.enqueue(enc.encode(text));
      } catch {
        finish();
      }
    };
    const heartbeat = setInterval(() => write(': ping\n\n'), ctx.sse.heartbeatMs);
    heartbeat.unref();
    const finish = () => {
      if (closed) return;
      closed = true;
      clearInterval(heartbeat);
      unsubscribe();
      ctx.sse.open.delete(finish);
      ctx.log.debug('event stream closed', { jobId: id, lastSeq: after });
      signal();
      try {
        controllerRef?.close();
      } catch {
        // already closed
      }
    };
    ctx.sse.open.add(finish);

    const sendNew = async () => {
      while (!closed) {
        const evs = await ctx.store.listEvents(id, after, PAGE);
        for (const ev of evs) {
          write(sseJobEvent(ev));
          after = ev.seq;
        }
        if (evs.length < PAGE) return;
        // Let the socket flush this page before reading the next: a long replay (10,000
        // events) then reaches the reader page by page instead of all at the end.
        await new Promise<void>((resolve) => setImmediate(resolve));
      }
    };

    const revoked = credentialCheck(c, ctx.store, ctx.now);
    const loop = async () => {
      write(': stream of job events\n\n');
      while (!closed) {
        dirty = false;
        const why = await revoked();
        if (why) {
          // The caller may no longer read: no event after the revoke (issue 5 fresh-user finding).
          write(`event: error\ndata: ${JSON.stringify({ code: 'unauthorized', message: why })}\n\n`);
          finish();
          return;
        }
        await sendNew();
        const job = await ctx.store.getJob(id);
        if (job && isTerminal(job.status)) {
          await sendNew();
          write(`event: end\ndata: ${JSON.stringify({ status: job.status })}\n\n`);
          finish();
          return;
        }
        if (dirty || closed) continue;
        await new Promise<void>((resolve) => {
          const t = setTimeout(resolve, ctx.sse.pollMs);
          wake = () => {
            clearTimeout(t);
            resolve();
          };
        });
      }
    };

    const stream = new ReadableStream<Uint8Array>({
      start(controller) {
        controllerRef = controller;
        loop().catch((err: unknown) => {
          ctx.log.warn('event stream failed', { jobId: id, err: String(err) });
          finish();
        });
      },
      cancel() {
        finish();
      },
    });
    return new Response(stream, {
      headers: {
        'content-type': 'text/event-stream; charset=utf-8',
        'cache-control': 'no-cache',
        'x-accel-buffering': 'no',
        connection: 'keep-alive',
      },
    });
  });
}
