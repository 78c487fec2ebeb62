import type { TaskTables } from './tasks-schema.js';
import type { ModelActivityTables } from './model-activity-schema.js';
import type { AgentVersionTables } from './agent-versions-schema.js';
import type { EffortTierTables } from './effort-tiers-schema.js';
import type { DashboardTables } from './dashboard-schema.js';
import type { ColumnType, Generated } from 'kysely';

/**
 * The Kysely table types of the Flotilla schema (see migrations/0001_init.ts). These describe
 * what the drivers hand back, which differs by engine; store/codec.ts converts every column to
 * its single JS type (the `Store` row types of types.ts) in one place.
 *
 * - `Int8`: epoch-ms times, micro-dollars, token counts. SQLite gives a number, `pg` a string.
 * - `Json`: written as JSON text; SQLite gives the text back, PostgreSQL (jsonb) a parsed value.
 * - `Flag`: booleans, stored as integer 0/1 on both engines.
 */
export type Int8 = ColumnType<number | string, number, number>;
export type Json = ColumnType<unknown, string, string>;
export type Flag = ColumnType<number, number, number>;

export interface ApiTokensTable {
  id: Generated<number>;
  name: string;
  role: string;
  token_hash: string;
  created_at: Int8;
}

export interface RegistrationTokensTable {
  /** 0019. */
  id: Generated<number>;
  token_hash: string;
  labels: Json;
  expires_at: Int8;
  used_at: Int8 | null;
  /** 0019: epoch ms; a revoked token is never consumed. */
  revoked_at: Int8 | null;
  created_at: Int8;
}

export interface RunnersTable {
  id: Generated<number>;
  name: string;
  labels: Json;
  capacity: number;
  version: string | null;
  credential_hash: string;
  connected: Flag;
  offline: Flag;
  last_heartbeat_at: Int8 | null;
  created_at: Int8;
  /** 0003: dispatch hold (epoch ms end, reason, `manual`/`provisioning`); revocation time. */
  hold_until: Int8 | null;
  hold_reason: string | null;
  hold_kind: string | null;
  revoked_at: Int8 | null;
  /** 0009: token labels (binding), browser slots offered, the owner's capacity settings (null = not set). */
  bound_labels: ColumnType<unknown, string | undefined, string>;
  browser_slots: ColumnType<number, number | undefined, number>;
  owner_capacity: number | null;
  owner_browser_slots: number | null;
  /** 0021: the runner process holding the connection (`hello.instance`), the connection's server-side id, since when (epoch ms). */
  instance: string | null;
  instance_conn: string | null;
  instance_since: Int8 | null;
}

export interface JobsTable {
  id: Generated<number>;
  parent_id: number | null;
  root_id: number;
  agent: string;
  agent_version: string;
  input: Json;
  status: string;
  end_reason: string | null;
  error: string | null;
  priority: number;
  selector: Json;
  runner_id: number | null;
  attempt: number;
  budget_micros: Int8;
  session_id: string | null;
  resume_session_id: string | null;
  result: Json | null;
  token_hash: string | null;
  created_at: Int8;
  assigned_at: Int8 | null;
  started_at: Int8 | null;
  finished_at: Int8 | null;
  /** 0003: retries of a lost job still allowed (from the agent's `retries`). */
  retries_left: ColumnType<number, number | undefined, number>;
  /** 0004: only this runner may claim the job (it holds the workspace to resume); null = any. */
  pinned_runner_id: ColumnType<number | null, number | null | undefined, number | null>;
  /** 0004: the job whose workspace and harness HOME the job continues in; null = its own. */
  workspace_job_id: ColumnType<number | null, number | null | undefined, number | null>;
  /** 0004: the effort tier the run asked for; null = the agent's / account default. */
  effort_tier: ColumnType<string | null, string | null | undefined, string | null>;
  /** 0009: what the job holds on its runner (`runner`/`workspace`/`browser`/`none`), set at claim; null = workspace. */
  holds: ColumnType<string | null, string | null | undefined, string | null>;
  /** 0023: times the job went back to the queue because its runner never started it (store/unstarted.ts). */
  unstarted_requeues: ColumnType<number, number | undefined, number>;
  /** 0024: µ$, the worst case of the call whose refusal paused the job for budget (store/budget-resume.ts); null = not known (not paused for budget, or paused before 0024). */
  paused_need_micros: ColumnType<number | string | null, number | null | undefined, number | null>;
  /** 0027: JSON of what paused_need_micros was worked out from (gateway/worst-case.ts NeedCall); null when not known. */
  paused_need_call: ColumnType<string | null, string | null | undefined, string | null>;
  /** 0028: when a top-up last resumed the job (ms; store/budget-pause.ts), the start of its hold (budget-holds.ts lapseBudgetHolds); null when never. */
  resumed_at: ColumnType<number | string | null, number | null | undefined, number | null>;
  /** 0028: the attempt whose call the gateway admitted while the job held room (budget-holds.ts endHoldAtReservation); null when none. */
  hold_admitted_attempt: ColumnType<number | string | null, number | null | undefined, number | null>;
}

export interface JobEventsTable {
  job_id: number;
  seq: number;
  attempt: number;
  /** The runner's own sequence number within the attempt; null for server-made events. */
  rseq: number | null;
  type: string;
  data: Json;
  /** ISO-8601, as produced by the runner or server. */
  at: string;
}

export interface ModelCallsTable {
  id: Generated<number>;
  job_id: number;
  attempt: number;
  provider: string;
  model: string;
  api: string;
  streamed: Flag;
  http_status: number;
  input_tokens: Int8;
  output_tokens: Int8;
  cache_read_tokens: Int8;
  cache_write_tokens: Int8;
  usage_known: Flag;
  cost_micros: Int8;
  started_at: Int8;
  duration_ms: Int8;
  /** 0002: exact cost in nano-dollars; runner of the job at call time; refusal reason (null = forwarded). */
  cost_nanos: ColumnType<number | string, number | undefined, number>;
  runner_id: ColumnType<number | null, number | null | undefined, number | null>;
  refused: ColumnType<string | null, string | null | undefined, string | null>;
  /** 0020: server-side web searches charged (H4). */
  web_search_requests: ColumnType<number | string, number | undefined, number>;
}

/** 0002: one budget per job tree (see store/budgets.ts). Money in micro-dollars. */
export interface TreeBudgetsTable {
  root_id: number;
  limit_micros: Int8;
  spent_micros: Int8;
  reserved_micros: Int8;
  updated_at: Int8;
  /** 0027: µ$ held for resumed jobs' calls (store/budget-holds.ts). */
  held_micros: ColumnType<number | string, number | undefined, number>;
}

/** 0005: people who sign in to the dashboard (see migrations/0005_users.ts). */
export interface UsersTable {
  id: Generated<number>;
  name: string;
  role: string;
  password_hash: string | null;
  oidc_issuer: string | null;
  oidc_subject: string | null;
  disabled: ColumnType<number, number | undefined, number>;
  created_at: Int8;
}

/** 0005: cookie sessions; `token_hash` is the SHA-256 of the cookie value. */
export interface SessionsTable {
  token_hash: string;
  user_id: number;
  created_at: Int8;
  expires_at: Int8;
  last_seen_at: Int8;
}

/** 0008: a model call's budget reservation in flight (see store/budgets.ts). */
export interface BudgetReservationsTable {
  id: Generated<number>;
  root_id: number;
  micros: Int8;
  created_at: Int8;
  expires_at: Int8;
  /** 0013: comma-separated job_budgets ids also held (null: the tree's row only). */
  job_ids?: string | null;
  /** 0020: JSON of the call (store/types.ts PendingCall), for the sweep's ledger row (H7). */
  call?: string | null;
  /** 0020: set once the sweep charged the expired reservation: µ$ charged, and its ledger row's id. */
  charged_micros?: ColumnType<number | string | null, number | null | undefined, number | null>;
  call_id?: ColumnType<number | string | null, number | null | undefined, number | null>;
}

/** 0013: a child job's budget sub-limit (store/job-budgets.ts), micro-dollars. */
export interface JobBudgetsTable {
  job_id: number;
  root_id: number;
  limit_micros: Int8;
  spent_micros: Int8;
  reserved_micros: Int8;
  updated_at: Int8;
  /** 0027: µ$ held for resumed jobs' calls (store/budget-holds.ts). */
  held_micros: ColumnType<number | string, number | undefined, number>;
}

/** 0008: model name pattern → provider, set through the API (see store/model-routes.ts). */
export interface ModelRoutesTable {
  pattern: string;
  provider: string;
  updated_at: Int8;
}

/** 0008: price overrides per model, USD per million tokens as JSON text. */
export interface ModelPricesTable {
  model: string;
  price: string;
  updated_at: Int8;
}

/** The whole database, as Kysely sees it (0006 tables: tasks-schema.ts). */
export interface Database extends TaskTables, ModelActivityTables, AgentVersionTables, EffortTierTables, DashboardTables {
  api_tokens: ApiTokensTable;
  registration_tokens: RegistrationTokensTable;
  runners: RunnersTable;
  jobs: JobsTable;
  job_events: JobEventsTable;
  model_calls: ModelCallsTable;
  tree_budgets: TreeBudgetsTable;
  budget_reservations: BudgetReservationsTable;
  job_budgets: JobBudgetsTable;
  model_routes: ModelRoutesTable;
  model_prices: ModelPricesTable;
  users: UsersTable;
  sessions: SessionsTable;
}

/** Which engine a Kysely instance talks to. */
export type SqlDialect = 'sqlite' | 'postgres';
