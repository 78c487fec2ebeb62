import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import { z } from 'zod';
import { ApiError, type FlotillaClient } from '../client/index.js';
import { Id } from '../protocol/index.js';
import { cancelJob, jobStatus, startJob, waitJobs } from './tools.js';

/** What {@link createMcpServer} needs: a client holding the job's token, and the job's id. */
export interface McpServerOptions {
  client: FlotillaClient;
  /** The calling job's id (FLOTILLA_JOB_ID); `wait_jobs` without ids waits for its children. */
  selfId?: number;
  /** Poll interval of `wait_jobs`, ms (default 500). */
  pollMs?: number;
  /** Package version reported to the MCP client. */
  version?: string;
}

/** A tool's reply: its JSON as text (what a model reads) and as structured content. */
function reply(value: object) {
  return { content: [{ type: 'text' as const, text: JSON.stringify(value, null, 2) }], structuredContent: value as Record<string, unknown> };
}

/** A tool error the model sees (`isError: true`), with the server's message and code; never the token. */
function toolError(err: unknown) {
  const text =
    err instanceof ApiError
      ? `${err.message}${err.code ? ` (${err.code}${err.field ? `, field ${err.field}` : ''}, HTTP ${err.status})` : ''}`
      : err instanceof Error
        ? err.message
        : String(err);
  return { content: [{ type: 'text' as const, text }], isError: true };
}

const Labels = z.record(z.string(), z.string()).describe('extra runner labels the child needs, e.g. {"toolchain":"python"}');

/**
 * The Flotilla MCP server (issue 6): tools `start_job`, `wait_jobs`, `job_status`,
 * `cancel_job` over the API with the calling job's token. Every refusal of the API (tree
 * depth/count limit, budget sub-limit above what is left, unknown agent, invalid input, a job
 * outside the tree) comes back as a tool error (`isError: true`) naming what is wrong.
 * Money in results: `cost_micros` (integer micro-dollars) and `cost` (USD string).
 */
export function createMcpServer(o: McpServerOptions): McpServer {
  const server = new McpServer({ name: 'flotilla', version: o.version ?? '0' });
  server.registerTool(
    'start_job',
    {
      description:
        'Start a child job: runs `agent` with `input` on a runner that has the agent\'s labels plus `labels`, inside this job tree and under its budget. ' +
        'Returns the child job (id, status queued). `budget_usd` caps the child (at most what the tree has left).',
      inputSchema: {
        agent: z.string().min(1).describe('agent name, e.g. repo-upgrader'),
        input: z.record(z.string(), z.unknown()).optional().describe('the agent\'s input object'),
        labels: Labels.optional(),
        budget_usd: z.number().positive().optional().describe('sub-limit for the child, USD'),
      },
    },
    async (args) => {
      try {
        return reply(await startJob(o.client, args));
      } catch (err) {
        return toolError(err);
      }
    },
  );
  server.registerTool(
    'wait_jobs',
    {
      description:
        'Wait until the given jobs (default: every child this job started) have ended, or timeout_seconds passes. ' +
        'Returns each job\'s status, summary, changed files, branch, commit, needs_human and cost, and the totals.',
      inputSchema: {
        ids: z.array(Id).optional().describe('job ids; default all children of this job'),
        timeout_seconds: z.number().positive().max(3600).optional().describe('default 600'),
      },
    },
    async (args, extra) => {
      try {
        return reply(
          await waitJobs(o.client, {
            ...(args.ids ? { ids: args.ids } : {}),
            ...(o.selfId !== undefined ? { selfId: o.selfId } : {}),
            ...(args.timeout_seconds !== undefined ? { timeoutSeconds: args.timeout_seconds } : {}),
            ...(o.pollMs !== undefined ? { pollMs: o.pollMs } : {}),
            signal: extra.signal,
          }),
        );
      } catch (err) {
        return toolError(err);
      }
    },
  );
  server.registerTool(
    'job_status',
    { description: 'Status, result and cost of one job of this tree.', inputSchema: { id: Id } },
    async (args) => {
      try {
        return reply(await jobStatus(o.client, args.id));
      } catch (err) {
        return toolError(err);
      }
    },
  );
  server.registerTool(
    'cancel_job',
    { description: 'Cancel a job this job started (or one of its descendants), with its whole subtree.', inputSchema: { id: Id } },
    async (args) => {
      try {
        return reply(await cancelJob(o.client, args.id));
      } catch (err) {
        return toolError(err);
      }
    },
  );
  return server;
}

/** Connects the server to a transport (stdio for `flotilla mcp`, in-memory in tests). */
export async function serveMcp(server: McpServer, transport: Transport): Promise<void> {
  await server.connect(transport);
}
