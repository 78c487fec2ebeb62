import type { Command } from 'commander';
import { Option } from 'commander';
import { FlotillaClient } from '../../client/index.js';
import type { CliContext } from '../context.js';
import { CliError } from '../options.js';
import { packageVersion } from '../paths.js';

/** Options of `flotilla mcp`. */
interface McpOptions {
  url?: string;
  jobToken?: string;
  jobId?: string;
}

/**
 * `flotilla mcp`: a stdio MCP server with the job-tree tools (`start_job`, `wait_jobs`,
 * `job_status`, `cancel_job`; src/mcp/server.ts), calling the control plane at `--url`
 * (FLOTILLA_URL) with the job token `--job-token` (FLOTILLA_JOB_TOKEN). The runner starts it
 * for every harness that speaks MCP, with those variables already set. Runs until stdin
 * closes; exit 0. Missing URL or token → exit 2 with a message naming the variable.
 */
export function registerMcp(program: Command, ctx: CliContext): void {
  program
    .command('mcp')
    .description('serve the job-tree tools (start_job, wait_jobs, job_status, cancel_job) over MCP on stdio, for an agent inside a job')
    .addOption(new Option('--url <url>', 'control plane URL').env('FLOTILLA_URL'))
    .addOption(new Option('--job-token <token>', "the running job's token (flj_...)").env('FLOTILLA_JOB_TOKEN'))
    .addOption(new Option('--job-id <id>', "the running job's id (wait_jobs without ids waits for its children)").env('FLOTILLA_JOB_ID'))
    .action(async (opts: McpOptions) => {
      if (!opts.url) throw new CliError('flotilla mcp: no control plane URL: set FLOTILLA_URL or --url', 2);
      if (!opts.jobToken) throw new CliError('flotilla mcp: no job token: set FLOTILLA_JOB_TOKEN or --job-token', 2);
      let selfId: number | undefined;
      if (opts.jobId !== undefined && opts.jobId !== '') {
        if (!/^[1-9][0-9]{0,14}$/.test(opts.jobId)) throw new CliError(`flotilla mcp: FLOTILLA_JOB_ID / --job-id must be a positive integer, got ${JSON.stringify(opts.jobId)}`, 2);
        selfId = Number(opts.jobId);
      }
      const client = new FlotillaClient({ url: opts.url, token: opts.jobToken });
      const { createMcpServer, serveMcp } = await import('../../mcp/server.js');
      const { StdioServerTransport } = await import('@modelcontextprotocol/sdk/server/stdio.js');
      const server = createMcpServer({ client, ...(selfId !== undefined ? { selfId } : {}), version: packageVersion() });
      const transport = new StdioServerTransport();
      const closed = new Promise<void>((resolve) => {
        transport.onclose = () => resolve();
        process.stdin.once('end', () => resolve());
      });
      await serveMcp(server, transport);
      await closed;
      await server.close();
      ctx.setExit(0);
    });
}
