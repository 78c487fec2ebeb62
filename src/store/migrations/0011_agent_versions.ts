import type { Kysely, Migration } from 'kysely';
import type { SqlDialect } from '../schema.js';

/**
 * 0011 (issue 6, agents as plugins): `agent_versions`, one row per installed version of an
 * agent. `flotilla agents install` writes every agent of a repository in one transaction;
 * every server replica reads them, and a job's `agent_version` names the row that ran.
 * - `seq`: 1, 2, ... per agent name; `version` = `v<seq>-<first 12 of commit>` (unique per name).
 * - `source`: git URL or folder path as given; `ref`: the ref asked for (null = default);
 *   `commit`: resolved git commit, or `sha256:<hex>` of a plain folder's files.
 * - `definition`: the AgentDefinition (prompt text inlined) as JSON text; `script`: the
 *   agent's `script.yaml` text (offline scripted model) or null.
 * - `installed_at`: epoch ms, server clock.
 */
export function agentVersions(dialect: SqlDialect): Migration {
  return {
    // eslint-disable-next-line @typescript-eslint/no-explicit-any -- migrations are untyped by design (Kysely docs)
    async up(db: Kysely<any>) {
      const base =
        dialect === 'postgres'
          ? db.schema.createTable('agent_versions').addColumn('id', 'bigserial', (c) => c.primaryKey())
          : db.schema.createTable('agent_versions').addColumn('id', 'integer', (c) => c.primaryKey().autoIncrement());
      await base
        .addColumn('name', 'text', (c) => c.notNull())
        .addColumn('seq', 'integer', (c) => c.notNull())
        .addColumn('version', 'text', (c) => c.notNull())
        .addColumn('source', 'text', (c) => c.notNull())
        .addColumn('ref', 'text')
        .addColumn('commit', 'text', (c) => c.notNull())
        .addColumn('definition', 'text', (c) => c.notNull())
        .addColumn('script', 'text')
        .addColumn('installed_at', 'bigint', (c) => c.notNull())
        .addUniqueConstraint('agent_versions_name_seq', ['name', 'seq'])
        .addUniqueConstraint('agent_versions_name_version', ['name', 'version'])
        .execute();
    },
    // eslint-disable-next-line @typescript-eslint/no-explicit-any -- as above
    async down(db: Kysely<any>) {
      await db.schema.dropTable('agent_versions').ifExists().execute();
    },
  };
}
