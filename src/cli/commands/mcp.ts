import type { Command } from 'commander';
import { Option } from 'commander';
import { FlotillaClient } from '../../client/index.js';
import type { CliContext } from '../context.js';
import { cutEcho } from '../../protocol/echo.js';
import { MAX_ID } from '../../protocol/ids.js';
import { CliError, refuseEmptyOptions } from '../options.js';
import { packageVersion } from '../paths.js';

/** Options of `flotilla mcp`. */
interface McpOptions {
  server?: string;
  url?: string;
  jobToken?: string;
  jobId?: string;
}

/**
 * The control plane URL and where it came from: `--server`, `--url`, FLOTILLA_SERVER, FLOTILLA_URL, first given wins; null when none.
 * @throws CliError (exit 2) when one of them is given empty (options.ts refuseEmpty): it does not mean "try the next".
 */
function mcpServerUrl(opts: McpOptions, self: Command): { url: string; from: string } | null {
  refuseEmptyOptions(self, ['server', 'url']);
  const server = opts.server?.trim();
  const url = opts.url?.trim();
  if (server && self.getOptionValueSource('server') === 'cli') return { url: server, from: '--server' };
  if (url && self.getOptionValueSource('url') === 'cli') return { url, from: '--url' };
  if (server) return { url: server, from: 'FLOTILLA_SERVER' };
  if (url) return { url, from: 'FLOTILLA_URL' };
  return null;
}

/**
 * `flotilla mcp`: a stdio MCP server with the job-tree tools (`start_job`, `wait_jobs`,
 * `job_status`, `cancel_job`; src/mcp/server.ts), calling the control plane at `--server`
 * (FLOTILLA_SERVER, like every other command) with the job token `--job-token`
 * (FLOTILLA_JOB_TOKEN). `--url` / FLOTILLA_URL are kept as aliases: the runner sets
 * FLOTILLA_URL in every harness's environment. Which wins: `--server`, `--url`,
 * FLOTILLA_SERVER, FLOTILLA_URL. The runner starts it for every harness that speaks MCP, with
 * those variables already set. Runs until stdin closes; exit 0. Missing or bad URL, missing
 * token, a job id that is not a whole number from 1 to 2,147,483,647 → exit 2 with a message
 * naming the option and variable; so is any option given empty or blank (`--job-id ""`,
 * FLOTILLA_JOB_ID set to ""): options.ts refuseEmpty, never taken as unset.
 */
export function registerMcp(program: Command, ctx: CliContext): void {
  program
    .command('mcp')
    .description('serve the job-tree tools (start_job, wait_jobs, job_status, cancel_job) over MCP on stdio, for an agent inside a job')
    .addOption(new Option('--server <url>', 'control plane URL').env('FLOTILLA_SERVER'))
    .addOption(new Option('--url <url>', 'alias of --server (FLOTILLA_URL is what the runner sets for harnesses)').env('FLOTILLA_URL'))
    .addOption(new Option('--job-token <token>', "the running job's token (flj_...)").env('FLOTILLA_JOB_TOKEN'))
    .addOption(new Option('--job-id <id>', "the running job's id (wait_jobs without ids waits for its children)").env('FLOTILLA_JOB_ID'))
    .action(async (opts: McpOptions, self: Command) => {
      const where = mcpServerUrl(opts, self);
      // An empty --job-id / --job-token (a script's `$FLOTILLA_JOB_ID` that expanded to nothing)
      // was refused before this, as every blank option is (options.ts refuseEmptyValues).
      if (!where) throw new CliError('flotilla mcp: no control plane URL: pass --server or set FLOTILLA_SERVER (or FLOTILLA_URL, as the runner does)', 2);
      if (!opts.jobToken) throw new CliError('flotilla mcp: no job token: set FLOTILLA_JOB_TOKEN or --job-token', 2);
      let selfId: number | undefined;
      if (opts.jobId !== undefined) {
        // A job id the store can hold (protocol/ids.ts MAX_ID), as every other job id argument.
        if (!/^[1-9][0-9]{0,9}$/.test(opts.jobId) || Number(opts.jobId) > MAX_ID) {
          throw new CliError(`flotilla mcp: FLOTILLA_JOB_ID / --job-id must be a job id, a whole number from 1 to ${MAX_ID}, got ${JSON.stringify(cutEcho(opts.jobId))}`, 2);
        }
        selfId = Number(opts.jobId);
      }
      let client: FlotillaClient;
      try {
        client = new FlotillaClient({ url: where.url, token: opts.jobToken });
      } catch (err) {
        const msg = err instanceof Error ? err.message.replace(/^FlotillaClient: /, '') : String(err);
        throw new CliError(`flotilla mcp: ${msg.startsWith('token ') ? '--job-token (FLOTILLA_JOB_TOKEN)' : where.from}: ${msg}`, 2);
      }
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
