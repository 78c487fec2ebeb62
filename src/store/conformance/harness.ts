import type { Labels } from '../../protocol/index.js';
import type { JobRow, NewJob, RunnerRow, Store } from '../types.js';

/** What each conformance group gets: fresh stores, and sibling instances for concurrency. */
export interface Harness {
  /** A fresh, empty, migrated store; closed after the test. */
  open(): Promise<Store>;
  /** Another instance over the same data (closed after the test), or `s` itself on SQLite. */
  another(s: Store): Promise<Store>;
}

/** A fixed base time: 2027-01-15T08:00:00.000Z in epoch ms (beyond 2^31 seconds×1000, needs int8). */
export const T = 1_800_000_000_000;

let hashes = 0;
/** A unique fake token hash (64 hex chars, like core/tokens.ts hashToken). */
export function fakeHash(tag = 'h'): string {
  hashes += 1;
  return `${tag}${String(hashes)}`.padEnd(64, '0');
}

/** Creates a job with test defaults; `over` overrides fields. */
export function newJob(s: Store, over: Partial<NewJob> = {}): Promise<JobRow> {
  return s.createJob({
    parentId: null,
    agent: 'test-fixer',
    agentVersion: '1',
    input: { repo: 'examples/calc' },
    selector: {},
    priority: 0,
    budgetMicros: 1_000_000,
    now: T,
    ...over,
  });
}

/** Creates a runner with the given labels (capacity 1). */
export function newRunner(s: Store, labels: Labels = {}, name = 'r', now = T): Promise<RunnerRow> {
  return s.createRunner({ name, labels, capacity: 1, credentialHash: fakeHash('c'), now });
}
