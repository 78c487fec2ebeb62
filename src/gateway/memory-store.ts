import { hashToken } from '../core/tokens.js';
import type { JobRow, NewModelCall } from '../store/types.js';
import type { GatewayStore } from './gateway.js';

/**
 * A tiny in-memory {@link GatewayStore} for tests and experiments: jobs are registered with
 * their plain token (kept only as its hash), model calls are kept in `calls` in order.
 */
export class MemoryGatewayStore implements GatewayStore {
  readonly calls: NewModelCall[] = [];
  private readonly byHash = new Map<string, JobRow>();

  /** Makes `token` a live token of a running job with the given fields (id 1, agent test-fixer by default). */
  addJob(token: string, fields: Partial<JobRow> = {}): JobRow {
    const id = fields.id ?? 1;
    const job: JobRow = {
      id,
      parentId: null,
      rootId: id,
      agent: 'test-fixer',
      agentVersion: '1',
      input: {},
      status: 'running',
      endReason: null,
      error: null,
      priority: 0,
      selector: {},
      runnerId: 1,
      attempt: 1,
      budgetMicros: 1_000_000,
      sessionId: null,
      resumeSessionId: null,
      result: null,
      createdAt: 0,
      assignedAt: 0,
      startedAt: 0,
      finishedAt: null,
      ...fields,
    };
    this.byHash.set(hashToken(token), job);
    return job;
  }

  /** Kills a token (as when its job ends). */
  removeToken(token: string): void {
    this.byHash.delete(hashToken(token));
  }

  async findJobByTokenHash(tokenHash: string): Promise<JobRow | null> {
    return this.byHash.get(tokenHash) ?? null;
  }

  async recordModelCall(c: NewModelCall): Promise<void> {
    this.calls.push(c);
  }
}
