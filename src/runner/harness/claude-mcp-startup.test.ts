/**
 * The real Claude Code CLI with an MCP server that is slow to start (a loaded machine: `flotilla
 * mcp` is a Node process). Measured with Claude Code 2.1: in `-p` mode it connects MCP servers
 * in the background, and a server up 2 s late was missing at the first turn ("No such tool
 * available"; the job-tree e2e test failed in CI that way). With the config and environment the
 * runner gives it (`alwaysLoad`, MCP_CONNECT_TIMEOUT_MS: mcp-config.ts, claude-code.ts) it
 * waits: here the server comes up 4 s late and its tool still answers the first turn's call.
 */
import { spawn } from 'node:child_process';
import { createServer, type Server } from 'node:http';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AgentDefinition } from '../../protocol/index.js';
import { scriptedModel } from '../testdata/scripted-model.js';
import { claudeMcpConfig } from './mcp-config.js';
import { defaultClaudePath, harnessEnv } from './claude-code.js';

const SLOW_SERVER = `import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
await new Promise((r) => setTimeout(r, 4000));
const server = new McpServer({ name: 'flotilla', version: '0' });
server.registerTool('job_status', { description: 'status of a job' }, async () => ({ content: [{ type: 'text', text: 'job 7 is running' }] }));
await server.connect(new StdioServerTransport());
`;

const model = scriptedModel([
  { content: [{ type: 'tool_use', id: 'toolu_m1', name: 'mcp__flotilla__job_status', input: {} }], usage: { input: 10, output: 5, cacheRead: 0, cacheWrite: 0 } },
  { content: [{ type: 'text', text: 'done' }], usage: { input: 20, output: 2, cacheRead: 0, cacheWrite: 0 } },
]);

let dir: string;
let http: Server;
let url: string;

beforeAll(async () => {
  // The stub server's imports resolve from the package's node_modules: it lives under the checkout.
  dir = mkdtempSync(join(process.cwd(), 'node_modules', '.flotilla-mcp-startup-'));
  http = createServer((req, res) => {
    if (!model.handle(req, res)) res.writeHead(404).end();
  });
  await new Promise<void>((r) => http.listen(0, '127.0.0.1', r));
  url = `http://127.0.0.1:${(http.address() as { port: number }).port}`;
});

afterAll(async () => {
  await new Promise((r) => http.close(r));
  rmSync(dir, { recursive: true, force: true });
});

describe('Claude Code and a slow MCP server', () => {
  it('waits for flotilla mcp before its first turn: the tool call of turn 1 is answered by the server', async () => {
    writeFileSync(join(dir, 'slow-mcp.mjs'), SLOW_SERVER);
    // The runner's config for the server, with only the command swapped for the slow stub.
    const config = JSON.parse(claudeMcpConfig()) as { mcpServers: { flotilla: Record<string, unknown> } };
    config.mcpServers.flotilla = { ...config.mcpServers.flotilla, command: process.execPath, args: [join(dir, 'slow-mcp.mjs')] };
    writeFileSync(join(dir, 'mcp.json'), JSON.stringify(config));
    const agent = AgentDefinition.parse({ name: 'a', harness: 'claude-code', promptText: 'p' });
    const env = harnessEnv(
      { jobId: 7, attempt: 1, agent, input: {}, prompt: 'p', token: 'flj_mcpstartuptoken', serverUrl: url, workspace: dir, branch: 'b', home: dir, resumeSessionId: null },
      process.env,
    );
    const out = await new Promise<string>((resolve, reject) => {
      const c = spawn(defaultClaudePath(), ['-p', '--output-format', 'stream-json', '--verbose', '--max-turns', '3', '--dangerously-skip-permissions', '--mcp-config', join(dir, 'mcp.json'), '--strict-mcp-config', '--', 'check job 7'], { cwd: dir, env, stdio: ['ignore', 'pipe', 'pipe'] });
      let text = '';
      c.stdout.on('data', (d) => (text += d));
      c.stderr.on('data', (d) => (text += d));
      c.on('error', reject);
      c.on('close', () => resolve(text));
    });
    expect(model.requests.length, out).toBe(2);
    expect(model.requests[0]!.body.tools?.map((t) => t.name)).toContain('mcp__flotilla__job_status');
    const results = JSON.stringify(model.requests[1]!.body.messages);
    expect(results).toContain('job 7 is running');
    expect(results).not.toContain('No such tool');
  }, 90_000);
});
