import type { JobResult } from '../protocol/index.js';
import type { JobRow, Store } from '../store/types.js';
import { childLabel } from './child-jobs.js';

/** One child's line in its parent's result (issue 6: "the parent collects which are done, which need a person, and what each cost"). */
export interface ChildResult {
  id: number;
  agent: string;
  /** Its input's `name` or the last part of its `repo`, when it has one. */
  label?: string;
  status: string;
  endReason: string | null;
  branch?: string;
  commit?: string;
  needsHuman: boolean;
  /** Cost of the child's own model calls, integer micro-dollars. */
  costMicros: number;
}

/**
 * The result a job ends with, plus `children`: a {@link ChildResult} for each of its direct
 * children (id ascending) with its status, branch, commit, needs-human flag and cost (µ$ of
 * its own calls), read from the store as the job finishes. `cost_micros` of the whole subtree
 * is in `GET /api/jobs/:id/tree`. A job without children gets `result` back unchanged.
 */
export async function withChildResults(store: Pick<Store, 'listTreeJobs' | 'jobUsageMany'>, job: JobRow, result: JobResult | null): Promise<JobResult | null> {
  const tree = await store.listTreeJobs(job.rootId);
  const kids = tree.filter((j) => j.parentId === job.id);
  if (kids.length === 0) return result;
  const usage = await store.jobUsageMany(kids.map((k) => k.id));
  const children: ChildResult[] = kids.map((k) => {
    const label = childLabel(k.input);
    return {
      id: k.id,
      agent: k.agent,
      ...(label ? { label } : {}),
      status: k.status,
      endReason: k.endReason,
      ...(k.result?.branch ? { branch: k.result.branch } : {}),
      ...(k.result?.commit ? { commit: k.result.commit } : {}),
      needsHuman: k.result?.needsHuman ?? false,
      costMicros: usage.get(k.id)?.costMicros ?? 0,
    };
  });
  return { ...(result ?? {}), children };
}
