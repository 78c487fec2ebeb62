import type { JobResult, JobUsage } from '../protocol/index.js';
import type { JobRow } from '../store/types.js';
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
 * children `kids` (in the order given: id ascending) with its status, branch, commit,
 * needs-human flag and cost (µ$ of its own calls, from `usage`; none: 0). `cost_micros` of the
 * whole subtree is in `GET /api/jobs/:id/tree`. No children: `result` unchanged. Pure: the
 * store calls it inside the transaction that ends the job (store applyRunnerFrame, `withChildren`).
 */
export function withChildResults(result: JobResult | null, kids: readonly JobRow[], usage: ReadonlyMap<number, Pick<JobUsage, 'costMicros'>>): JobResult | null {
  if (kids.length === 0) return result;
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
