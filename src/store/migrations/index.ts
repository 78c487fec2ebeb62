import { Migrator, type Kysely, type Migration, type MigrationProvider } from 'kysely';
import type { Database, SqlDialect } from '../schema.js';
import { init } from './0001_init.js';
import { budgets } from './0002_budgets.js';
import { fleet } from './0003_fleet.js';
import { sessions } from './0004_sessions.js';
import { users } from './0005_users.js';
import { tasks } from './0006_tasks.js';
import { gateway } from './0008_gateway.js';
import { capacity } from './0009_capacity.js';
import { modelActivity } from './0010_model_activity.js';
import { agentVersions } from './0011_agent_versions.js';
import { taskSlots } from './0012_task_slots.js';
import { jobBudgets } from './0013_job_budgets.js';
import { effortTiers } from './0014_effort_tiers.js';
import { deliveryTask } from './0015_delivery_task.js';
import { dashboard } from './0016_dashboard.js';
import { taskPendingEvents } from './0017_task_pending_events.js';
import { pausedReleased } from './0018_paused_released.js';
import { registrationTokenIds } from './0019_registration_token_ids.js';
import { unsettledCalls } from './0020_unsettled_calls.js';
import { runnerInstance } from './0021_runner_instance.js';
import { runnerAttempts } from './0022_runner_attempts.js';
import { unstartedRequeues } from './0023_unstarted_requeues.js';
import { pausedNeed } from './0024_paused_need.js';
import { sqliteReservationIndex } from './0025_sqlite_reservation_index.js';
import { taskBudget } from './0026_task_budget.js';
import { budgetHolds } from './0027_budget_holds.js';
import { budgetHoldLapse } from './0028_budget_hold_lapse.js';

/**
 * Every migration, by name, in order. A static list (not a folder glob) so it works the same
 * from src/ under vitest and from dist/ after a build. Add `0002_...` here.
 */
function allMigrations(dialect: SqlDialect): Record<string, Migration> {
  return {
    '0001_init': init(dialect),
    '0002_budgets': budgets(dialect),
    '0003_fleet': fleet(),
    '0004_sessions': sessions(),
    '0005_users': users(dialect),
    '0006_tasks': tasks(dialect),
    '0008_gateway': gateway(dialect),
    '0009_capacity': capacity(dialect),
    '0010_model_activity': modelActivity(),
    '0011_agent_versions': agentVersions(dialect),
    '0012_task_slots': taskSlots(),
    '0013_job_budgets': jobBudgets(),
    '0014_effort_tiers': effortTiers(),
    '0015_delivery_task': deliveryTask(),
    '0016_dashboard': dashboard(dialect),
    '0017_task_pending_events': taskPendingEvents(),
    '0018_paused_released': pausedReleased(),
    '0019_registration_token_ids': registrationTokenIds(dialect),
    '0020_unsettled_calls': unsettledCalls(),
    '0021_runner_instance': runnerInstance(),
    '0022_runner_attempts': runnerAttempts(dialect),
    '0023_unstarted_requeues': unstartedRequeues(),
    '0024_paused_need': pausedNeed(),
    '0025_sqlite_reservation_index': sqliteReservationIndex(dialect),
    '0026_task_budget': taskBudget(),
    '0027_budget_holds': budgetHolds(),
    '0028_budget_hold_lapse': budgetHoldLapse(),
  };
}

/**
 * Brings the schema up to the newest migration. Safe to call at every open; on PostgreSQL
 * Kysely holds an advisory lock, so several servers starting at once migrate only once.
 * `schema` (PostgreSQL only): the schema the connection's search_path points at, so the
 * migration bookkeeping tables are looked for there.
 * @throws Error naming the failed migration and its cause.
 */
export async function migrateToLatest(db: Kysely<Database>, dialect: SqlDialect, schema?: string): Promise<void> {
  const provider: MigrationProvider = { getMigrations: async () => allMigrations(dialect) };
  const migrator = new Migrator({
    db,
    provider,
    migrationTableName: 'flotilla_migrations',
    migrationLockTableName: 'flotilla_migrations_lock',
    ...(schema ? { migrationTableSchema: schema } : {}),
  });
  const { error, results } = await migrator.migrateToLatest();
  if (error) {
    const failed = results?.find((r) => r.status === 'Error')?.migrationName ?? '(before running any)';
    const cause = error instanceof Error ? error.message : String(error);
    throw new Error(`store migration ${failed} failed: ${cause}`, { cause: error });
  }
}
