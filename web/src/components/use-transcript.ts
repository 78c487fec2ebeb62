import { useCallback, useEffect, useRef, useState } from 'react';
import { client, errorText, type JobEvent } from '../api.js';
import { foldEvents, type Item } from './transcript.js';

/** Events of the first screen: the tail of the job (a few screens' worth of rows). */
export const TAIL_EVENTS = 200;
/** Events per older page read as the reader scrolls up. */
export const OLDER_PAGE = 1000;

/** What {@link useTranscript} gives the job page. */
export interface TranscriptState {
  /** Rows folded from every event loaded so far, oldest first. */
  items: Item[];
  /** Bumped whenever `items` changed (the array is reused). */
  version: number;
  /** How many older events are not loaded yet (seqs run 1..n, so the first loaded seq − 1). */
  olderCount: number;
  /** True while an older page is being read. */
  loadingOlder: boolean;
  /** Reads the next older page (no-op while one is being read or none is left). */
  loadOlder: () => void;
  /** The job's status from the stream's end, or null while it runs. */
  ended: string | null;
  error: string;
}

/** Resolves just after the browser's next frame (rAF, then a task), marking the first one drawn with rows. */
function nextFrame(): Promise<void> {
  return new Promise((r) =>
    requestAnimationFrame(() =>
      setTimeout(() => {
        if (performance.getEntriesByName('flotilla:first-row').length > 0 && performance.getEntriesByName('flotilla:first-frame').length === 0) performance.mark('flotilla:first-frame');
        r();
      }, 0),
    ),
  );
}

/**
 * A job's transcript, tail first (issue 8: a 10,000-event job opens in under a second): one
 * small page of the newest events (`GET /api/jobs/:id/events/page`), then the live events over
 * SSE from there (client.followEvents with `after`), folded at most once per animation frame;
 * older pages only when the reader scrolls up (`loadOlder`). The first screen so costs the
 * same for 10 events or 10,000; the whole history is never parsed unless someone reads it.
 */
export function useTranscript(jobId: number): TranscriptState {
  const events = useRef<JobEvent[]>([]);
  const items = useRef<Item[]>([]);
  const index = useRef(new Map<string, number>());
  const [version, setVersion] = useState(0);
  const [olderCount, setOlderCount] = useState(0);
  const [loadingOlder, setLoadingOlder] = useState(false);
  const busy = useRef(false);
  const [ended, setEnded] = useState<string | null>(null);
  const [error, setError] = useState('');

  useEffect(() => {
    events.current = [];
    items.current = [];
    index.current = new Map();
    setVersion((n) => n + 1);
    setEnded(null);
    setOlderCount(0);
    const abort = new AbortController();
    let pending: JobEvent[] = [];
    let frame = 0;
    const flush = () => {
      frame = 0;
      if (pending.length === 0) return;
      if (items.current.length === 0) performance.mark('flotilla:first-flush');
      events.current.push(...pending);
      foldEvents(items.current, index.current, pending);
      pending = [];
      setVersion((n) => n + 1);
    };
    (async () => {
      try {
        const tail = await client.getJobEventPage(jobId, { limit: TAIL_EVENTS });
        if (abort.signal.aborted) return;
        if (tail.events.length) performance.mark('flotilla:first-event');
        pending = tail.events;
        setOlderCount(tail.olderCount);
        flush();
        await nextFrame();
        const after = events.current.at(-1)?.seq ?? 0;
        let slice = performance.now();
        for await (const ev of client.followEvents(jobId, { after, signal: abort.signal, onEnd: (s) => setEnded(s) })) {
          pending.push(ev);
          if (!frame) frame = requestAnimationFrame(flush);
          // A burst (a reconnect's replay) arrives faster than it folds: every ~40 ms let the browser draw.
          if (performance.now() - slice > 40) {
            if (frame) cancelAnimationFrame(frame);
            flush();
            await nextFrame();
            slice = performance.now();
          }
        }
        if (pending.length) flush();
      } catch (e) {
        if (!abort.signal.aborted) setError(errorText(e));
      }
    })();
    return () => {
      abort.abort();
      if (frame) cancelAnimationFrame(frame);
    };
  }, [jobId]);

  const loadOlder = useCallback(() => {
    const first = events.current[0]?.seq;
    if (busy.current || first === undefined || first <= 1) return;
    busy.current = true;
    setLoadingOlder(true);
    client
      .getJobEventPage(jobId, { before: first, limit: OLDER_PAGE })
      .then((page) => {
        if (events.current[0]?.seq !== first) return; // the job changed meanwhile
        // Refold everything: a tool.result loaded earlier may belong to a call on this page.
        events.current = [...page.events, ...events.current];
        const fresh: Item[] = [];
        const idx = new Map<string, number>();
        foldEvents(fresh, idx, events.current);
        items.current = fresh;
        index.current = idx;
        setOlderCount(page.olderCount);
        setVersion((n) => n + 1);
      })
      .catch((e: unknown) => setError(errorText(e)))
      .finally(() => {
        busy.current = false;
        setLoadingOlder(false);
      });
  }, [jobId]);

  return { items: items.current, version, olderCount, loadingOlder, loadOlder, ended, error };
}
