import { afterAll, beforeAll, describe } from 'vitest';
import { runCli } from '../test-io.js';
import type { BudgetView } from '../../protocol/index.js';
import { createTestDatabase } from '../../store/test-pg.js';
import type { JobRow } from '../../store/types.js';
import { startTestServer, type TestServer } from '../../server/test-helpers.js';

/** The jobs' creation time (epoch ms) of a {@link budgetServerSuites} file. */
export const T = Date.now();

/** What the budget CLI/API tests share over one real server (see {@link budgetServerSuites}). */
export interface BudgetServer {
  /** The server, null when its store is unreachable (PostgreSQL absent): the test skips. */
  server(): TestServer | null;
  /** A job of `parentId`'s tree (null: a root) with `budgetMicros` of its own (0: none), queued on no runner. */
  job(parentId: number | null, budgetMicros: number): Promise<JobRow>;
  /** The tree these tests share: R ($1.00) → C (sub-limit $0.60) → G (none of its own) and D (its own $0.30). */
  tree(): Promise<{ r: JobRow; c: JobRow; g: JobRow; d: JobRow }>;
  /** Charges `micros` to job `on`'s path (the tree alone when it is root `r`); `settle` false keeps it reserved. */
  charge(r: JobRow, on: JobRow, micros: number, settle?: boolean): Promise<void>;
  /** `GET /api/jobs/:id/budget`. */
  view(id: number): Promise<BudgetView>;
  /** The CLI against the server with the admin token. */
  cli(...args: string[]): ReturnType<typeof runCli>;
}

/**
 * Runs `body` twice, as `describe` blocks over a real server: on SQLite, and on a fresh
 * PostgreSQL database when one is reachable (dropped afterwards).
 */
export function budgetServerSuites(body: (s: BudgetServer) => void): void {
  const stores: Array<[string, () => Promise<TestServer | null>]> = [
    ['on SQLite', () => startTestServer()],
    [
      'on PostgreSQL',
      async () => {
        const db = await createTestDatabase();
        if (!db) return null;
        const t = await startTestServer({ databaseUrl: db.url });
        return { ...t, close: async () => (await t.close(), await db.drop()) };
      },
    ],
  ];
  for (const [name, start] of stores) {
    describe(name, () => {
      let t: TestServer | null = null;
      beforeAll(async () => {
        t = await start();
      });
      afterAll(async () => {
        await t?.close();
      });
      const job = (parentId: number | null, budgetMicros: number) => t!.store.createJob({ parentId, agent: 'test-fixer', agentVersion: '1', input: {}, selector: { pool: 'nobody' }, priority: 0, budgetMicros, now: T });
      body({
        server: () => t,
        job,
        tree: async () => {
          const r = await job(null, 1_000_000);
          const c = await job(r.id, 600_000);
          const g = await job(c.id, 0);
          const d = await job(c.id, 300_000);
          return { r, c, g, d };
        },
        charge: async (r, on, micros, settle = true) => {
          const held = await t!.store.reserveBudget(r.id, micros, T, 3_600_000, on.id === r.id ? undefined : on.id);
          if (!held?.ok) throw new Error('no fit');
          if (settle) await t!.store.settleBudget(r.id, held.reservationId, micros, T);
        },
        view: async (id) => (await (await t!.api(`/api/jobs/${id}/budget`)).json()) as BudgetView,
        cli: (...args) => runCli([...args, '--server', t!.url, '--token', t!.admin]),
      });
    });
  }
}
