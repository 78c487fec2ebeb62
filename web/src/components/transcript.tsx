import { useEffect, useLayoutEffect, useMemo, useRef, useState } from 'react';
import { useVirtualizer } from '@tanstack/react-virtual';
import type { JobEvent } from '../api.js';
import { Link } from '../router.js';

/** One row of the transcript: an event, or a tool call folded together with its result. */
export type Item =
  | { kind: 'tool'; seq: number; id: string; name: string; input: unknown; result?: { output: string; isError: boolean; truncated?: boolean } }
  | { kind: 'event'; seq: number; ev: JobEvent };

/**
 * Folds events into rows: a `tool.result` joins the row of the `tool.call` with the same id
 * (in place, so rows never move); `usage` events are left out (the gateway ledger is the cost).
 * `index` maps tool-call ids to row positions; both are updated in place for speed.
 */
export function foldEvents(items: Item[], index: Map<string, number>, events: readonly JobEvent[]): void {
  for (const ev of events) {
    if (ev.type === 'usage') continue;
    if (ev.type === 'tool.call') {
      index.set(ev.data.id, items.length);
      items.push({ kind: 'tool', seq: ev.seq, id: ev.data.id, name: ev.data.name, input: ev.data.input });
      continue;
    }
    if (ev.type === 'tool.result') {
      const at = index.get(ev.data.id);
      const row = at === undefined ? undefined : items[at];
      if (row && row.kind === 'tool') {
        items[at!] = { ...row, result: { output: ev.data.output, isError: ev.data.isError, truncated: ev.data.truncated } };
        continue;
      }
    }
    items.push({ kind: 'event', seq: ev.seq, ev });
  }
}

function short(v: unknown, max = 120): string {
  const s = typeof v === 'string' ? v : JSON.stringify(v);
  return s.length > max ? s.slice(0, max) + '…' : s;
}

function ToolRow({ item }: { item: Extract<Item, { kind: 'tool' }> }) {
  const [open, setOpen] = useState(false);
  const state = !item.result ? 'pending' : item.result.isError ? 'error' : 'ok';
  return (
    <div className={`tool ${state}`} data-testid="tool-call" data-tool={item.name}>
      <button className="fold" onClick={() => setOpen(!open)} aria-expanded={open}>
        <span className="caret">{open ? '▾' : '▸'}</span> <b>{item.name}</b> <code>{short(item.input)}</code>
        <span className="tool-state">{state === 'pending' ? 'running…' : state === 'error' ? 'error' : 'done'}</span>
      </button>
      {open && (
        <div className="tool-body">
          <pre>{typeof item.input === 'string' ? item.input : JSON.stringify(item.input, null, 2)}</pre>
          {item.result && (
            <pre className={item.result.isError ? 'err' : ''}>
              {item.result.output}
              {item.result.truncated ? '\n… (truncated)' : ''}
            </pre>
          )}
        </div>
      )}
    </div>
  );
}

function EventRow({ ev }: { ev: JobEvent }) {
  switch (ev.type) {
    case 'message':
      return (
        <div className={`msg ${ev.data.role}`} data-testid="message">
          <span className="who">{ev.data.role}</span> {ev.data.text}
        </div>
      );
    case 'child.started':
      return (
        <div className="sys">
          child job <Link to={`/jobs/${ev.data.jobId}`}>#{ev.data.jobId}</Link> ({ev.data.agent}) started
        </div>
      );
    case 'status':
      return (
        <div className="sys">
          status → {ev.data.status}
          {ev.data.message ? `: ${ev.data.message}` : ''}
        </div>
      );
    case 'progress':
      return <div className="sys">{ev.data.message}</div>;
    case 'harness.started':
      return (
        <div className="sys">
          {ev.data.harness} started (pid {ev.data.pid}){ev.data.branch ? ` on ${ev.data.branch}` : ''}
        </div>
      );
    case 'log':
      return <div className="log">{ev.data.line}</div>;
    case 'tool.result':
      return <div className="sys">result of {ev.data.name ?? ev.data.id}: {short(ev.data.output)}</div>;
    case 'attempt.ended':
      // A paused job's attempt ended, the job did not (a status line follows: still paused, or resuming)
      return (
        <div className="sys" data-testid="attempt-ended">
          {ev.data.status === 'cancelled' ? `attempt ${ev.data.attempt} stopped for the budget pause` : `attempt ${ev.data.attempt} ended on the budget refusal (${ev.data.status})`}
          {ev.data.error ? ` — ${ev.data.error}` : ''}
        </div>
      );
    case 'job.finished':
      // An attempt the budget refusal ended is not the job's end: the job waits paused for a
      // top-up (or fails, when its agent says so: a status line follows either way). It read
      // "finished: failed (budget)" before the job went on and succeeded (fresh-tester finding).
      if (ev.data.reason === 'budget') {
        return (
          <div className="sys" data-testid="finished">
            the attempt ended on the budget refusal ({ev.data.status}){ev.data.error ? ` — ${ev.data.error}` : ''}
          </div>
        );
      }
      return (
        <div className="sys" data-testid="finished">
          finished: {ev.data.status}
          {ev.data.reason ? ` (${ev.data.reason})` : ''}
          {ev.data.error ? ` — ${ev.data.error}` : ''}
        </div>
      );
    default:
      return <div className="sys">{ev.type}</div>;
  }
}

/** How close to the top (px) the reader scrolls before the next older page is read. */
const OLDER_AT_PX = 400;

/**
 * The transcript, virtualised (only the rows on screen are in the DOM, so 10,000 events
 * open and scroll like 10). Follows the end while the reader is at the bottom. Rows are keyed
 * by seq, so when older rows arrive on top (`loadOlder`, called as the reader nears the top
 * while `olderCount` > 0) the rows on screen stay where they are.
 */
export function Transcript({ items, version, olderCount = 0, loadingOlder = false, loadOlder }: { items: Item[]; version: number; olderCount?: number; loadingOlder?: boolean; loadOlder?: () => void }) {
  const parent = useRef<HTMLDivElement>(null);
  const [follow, setFollow] = useState(true);
  const v = useVirtualizer({ count: items.length, getScrollElement: () => parent.current, estimateSize: () => 30, overscan: 12, getItemKey: (i) => items[i]?.seq ?? i });
  // Older rows prepended: move the scroll position by what they added, so the view stays put.
  const anchor = useRef<{ first: number; total: number } | null>(null);
  useLayoutEffect(() => {
    const el = parent.current;
    const first = items[0]?.seq ?? 0;
    const total = v.getTotalSize();
    const was = anchor.current;
    if (el && was && first < was.first && !follow) el.scrollTop += total - was.total;
    anchor.current = { first, total };
  }, [version, items, v, follow]);
  useEffect(() => {
    if (follow && items.length > 0) v.scrollToIndex(items.length - 1, { align: 'end' });
  }, [version, follow, items.length, v]);
  const rows = v.getVirtualItems();
  useEffect(() => {
    if (rows.length > 0 && performance.getEntriesByName('flotilla:first-row').length === 0) performance.mark('flotilla:first-row');
  }, [rows.length]);
  // A tail too short to scroll (a tall window, a page of folded results) gets no scroll event: read on.
  useEffect(() => {
    const el = parent.current;
    if (el && olderCount > 0 && !loadingOlder && el.scrollHeight <= el.clientHeight + OLDER_AT_PX) loadOlder?.();
  }, [version, olderCount, loadingOlder, loadOlder]);
  const wantOlder = useRef(loadOlder);
  wantOlder.current = olderCount > 0 && !loadingOlder ? loadOlder : undefined;
  const onScroll = useMemo(
    () => () => {
      const el = parent.current;
      if (!el) return;
      setFollow(el.scrollHeight - el.scrollTop - el.clientHeight < 40);
      if (el.scrollTop < OLDER_AT_PX) wantOlder.current?.();
    },
    [],
  );
  return (
    <>
      {olderCount > 0 && (
        <div className="sys" data-testid="older-events">
          {loadingOlder ? 'loading older events…' : `${olderCount.toLocaleString('en-US')} older events: scroll up to read them`}
        </div>
      )}
      <div className="transcript" ref={parent} onScroll={onScroll} data-testid="transcript">
      <div style={{ height: v.getTotalSize(), position: 'relative' }}>
        {rows.map((r) => {
          const item = items[r.index]!;
          return (
            <div key={item.seq} data-index={r.index} ref={v.measureElement} className="row" style={{ position: 'absolute', top: 0, left: 0, right: 0, transform: `translateY(${r.start}px)` }}>
              {item.kind === 'tool' ? <ToolRow item={item} /> : <EventRow ev={item.ev} />}
            </div>
          );
        })}
      </div>
      </div>
    </>
  );
}
