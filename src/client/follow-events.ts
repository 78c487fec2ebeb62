import { z } from 'zod';
import { JobEvent, describeIssues } from '../protocol/index.js';
import { ApiError, apiErrorFromResponse } from './errors.js';
import { SseParser, parseSseStream } from './sse.js';
import { causeOf, jobIdPath } from './util.js';

/** Options of {@link followJobEvents} (and `FlotillaClient.followEvents`). */
export interface FollowOptions {
  /** Start after this event seq (0 = from the beginning). */
  after?: number;
  /** Stops following: the iteration then ends quietly (no error). */
  signal?: AbortSignal;
  /** Called with the job's status from the stream's final `end` event. */
  onEnd?: (status: string) => void;
  /**
   * Called with what went wrong each time the stream is lost and about to be tried again
   * (`cannot reach URL: ECONNREFUSED`, `HTTP 503`, `the stream broke: ...`), and with null once
   * a stream is open again: a follower can say the server is unreachable instead of "still
   * working" (tester finding: an attached run said so for the whole outage).
   */
  onTrouble?: (problem: string | null) => void;
}

/** What following needs of the client: where, how to fetch, its auth headers, reconnect policy. */
export interface EventTransport {
  url: string;
  fetchFn: typeof fetch;
  headers: () => Record<string, string>;
  /** First reconnect delay, ms (doubles per failure, capped at 5 s; a server `retry:` overrides it). */
  reconnectDelayMs: number;
  /** Failures in a row before giving up. */
  maxReconnects: number;
}

const EndData = z.object({ status: z.string() });

/**
 * Follows a job's events over SSE (`GET /api/jobs/:id/events`), in seq order, each once.
 * If the stream drops before the server's `end` event, reconnects with `Last-Event-ID` =
 * the last seq seen (delay doubling from `t.reconnectDelayMs`, giving up with an ApiError
 * `network` after `t.maxReconnects` failures in a row). Finishes at `end`. An error reply
 * (401, 404, ...) throws at once. Aborting `signal` ends the iteration quietly.
 */
export async function* followJobEvents(t: EventTransport, jobId: number, opts: FollowOptions = {}): AsyncGenerator<JobEvent> {
  const { signal } = opts;
  const path = `/api/jobs/${jobIdPath(jobId)}/events`;
  let last = opts.after ?? 0;
  let failures = 0;
  let retryMs = t.reconnectDelayMs;
  let lastProblem = '';
  while (true) {
    if (signal?.aborted) return;
    if (failures > 0) {
      if (failures > t.maxReconnects) {
        throw new ApiError(0, 'network', `event stream of job ${jobId} kept failing (${failures} tries): ${lastProblem}`);
      }
      opts.onTrouble?.(lastProblem);
      await sleep(Math.min(retryMs * 2 ** (failures - 1), 5000), signal);
      if (signal?.aborted) return;
    }
    const headers: Record<string, string> = { ...t.headers(), accept: 'text/event-stream' };
    if (last > 0) headers['last-event-id'] = String(last);
    let res: Response;
    try {
      res = await t.fetchFn(t.url + path, { method: 'GET', headers, signal });
    } catch (err) {
      if (signal?.aborted) return;
      failures++;
      lastProblem = `cannot reach ${t.url}: ${causeOf(err)}`;
      continue;
    }
    if (!res.ok) {
      if (res.status >= 500 || res.status === 429) {
        await res.body?.cancel().catch(() => undefined);
        failures++;
        lastProblem = `HTTP ${res.status}`;
        continue;
      }
      throw await apiErrorFromResponse(res, `GET ${path}`);
    }
    if (!res.body) throw new ApiError(res.status, 'bad_response', `GET ${path}: the reply has no body`);
    const type = res.headers.get('content-type') ?? '';
    if (!type.startsWith('text/event-stream')) {
      await res.body.cancel().catch(() => undefined);
      throw new ApiError(res.status, 'bad_response', `GET ${path}: expected an event stream, got ${type || 'no content-type'}`);
    }
    if (failures > 0) opts.onTrouble?.(null);
    const parser = new SseParser();
    try {
      for await (const ev of parseSseStream(res.body, parser)) {
        if (ev.retry !== undefined) retryMs = ev.retry;
        if (ev.event === 'end') {
          const end = EndData.safeParse(safeJson(ev.data));
          if (end.success) opts.onEnd?.(end.data.status);
          return;
        }
        if (ev.event !== 'job' && ev.event !== 'message') continue;
        const parsed = JobEvent.safeParse(safeJson(ev.data));
        if (!parsed.success) {
          throw new ApiError(res.status, 'bad_response', `GET ${path}: bad event ${ev.id || '?'}: ${describeIssues(parsed.error.issues)}`);
        }
        if (parsed.data.seq <= last) continue; // replayed after a reconnect
        last = parsed.data.seq;
        failures = 0;
        yield parsed.data;
      }
      lastProblem = 'the stream ended before the job did';
    } catch (err) {
      if (err instanceof ApiError) throw err;
      if (signal?.aborted) return;
      lastProblem = `the stream broke: ${causeOf(err)}`;
    }
    failures++;
  }
}

function safeJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal?.aborted) return resolve();
    const t = setTimeout(done, ms);
    function done() {
      clearTimeout(t);
      signal?.removeEventListener('abort', done);
      resolve();
    }
    signal?.addEventListener('abort', done, { once: true });
  });
}
