/**
 * End to end through the `anthropic` provider's upstream path (upstream-http.ts, undici): the
 * REAL Claude Code CLI → the gateway served on plain node:http as the control plane serves it
 * (provider `anthropic`, metering and budgets on) → a second gateway standing in for the
 * Anthropic API (provider `scripted`, on its own port). Every streamed event crosses a real
 * proxy hop, and both gateways must record the same usage.
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createGateway } from './gateway.js';
import { MemoryGatewayStore } from './memory-store.js';
import { loadPriceTable } from './prices.js';
import { parseModelScript } from './script.js';
import { listen, type TestServer } from './test-server.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const CLAUDE = join(ROOT, 'node_modules/.bin/claude');
const OUTER_TOKEN = 'flj_outer_0123456789abcdefghijklmn';
const INNER_TOKEN = 'flj_inner_0123456789abcdefghijklmn';

// Two turns: a Bash tool call, then the final text. Usage per turn as the "provider" reports it.
const script = parseModelScript({
  turns: [
    { usage: { input_tokens: 3, output_tokens: 550, cache_read_input_tokens: 0, cache_creation_input_tokens: 12_304 }, content: [{ tool_use: { name: 'Bash', input: { command: 'echo proxied > out.txt' } } }] },
    { usage: { input_tokens: 4, output_tokens: 23, cache_read_input_tokens: 2_455, cache_creation_input_tokens: 0 }, content: [{ text: 'Wrote out.txt.' }] },
  ],
});

describe('real Claude Code through the gateway to an upstream (anthropic provider)', () => {
  const outerStore = new MemoryGatewayStore();
  const innerStore = new MemoryGatewayStore();
  let inner: TestServer;
  let outer: Server;
  let dir: string;
  let home: string;
  let result: { code: number | null; out: string; err: string };

  beforeAll(async () => {
    innerStore.addJob(INNER_TOKEN, { id: 2, agent: 'upstream' });
    inner = await listen(createGateway({ store: innerStore, config: { provider: 'scripted', anthropicBaseUrl: 'http://unused.invalid', prices: loadPriceTable() }, scriptFor: async () => script }).fetch);
    outerStore.addJob(OUTER_TOKEN, { id: 1, agent: 'proxied' });
    const gw = createGateway({ store: outerStore, config: { provider: 'anthropic', anthropicBaseUrl: inner.url, anthropicApiKey: INNER_TOKEN, prices: loadPriceTable(), retry: { retries: 0 } }, scriptFor: async () => null });
    outer = createServer((req, res) => (req.url?.startsWith('/v1/') ? gw.node(req, res) : res.writeHead(404).end()));
    await new Promise<void>((r) => outer.listen(0, '127.0.0.1', r));
    dir = mkdtempSync(join(tmpdir(), 'flotilla-proxied-'));
    home = mkdtempSync(join(tmpdir(), 'flotilla-home-'));
    result = await new Promise((resolve, reject) => {
      const p = spawn(CLAUDE, ['-p', 'Write proxied into out.txt.', '--output-format', 'stream-json', '--verbose', '--dangerously-skip-permissions', '--model', 'claude-sonnet-4-5'], {
        cwd: dir,
        stdio: ['ignore', 'pipe', 'pipe'],
        env: { PATH: process.env.PATH, HOME: home, IS_SANDBOX: '1', ANTHROPIC_BASE_URL: `http://127.0.0.1:${(outer.address() as AddressInfo).port}`, ANTHROPIC_API_KEY: OUTER_TOKEN, CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1' },
      });
      let out = '';
      let err = '';
      p.stdout.on('data', (d: Buffer) => (out += d.toString()));
      p.stderr.on('data', (d: Buffer) => (err += d.toString()));
      const timer = setTimeout(() => p.kill('SIGKILL'), 90_000);
      p.on('error', reject);
      p.on('close', (code) => {
        clearTimeout(timer);
        resolve({ code, out, err });
      });
    });
  }, 120_000);

  afterAll(async () => {
    await new Promise<void>((r) => (outer ? outer.close(() => r()) : r()));
    await inner?.close();
    for (const d of [dir, home]) if (d) rmSync(d, { recursive: true, force: true });
  });

  it('the CLI ran the tool and finished with the last turn', () => {
    expect(result.code, result.err).toBe(0);
    const last = result.out.trim().split('\n').map((l) => JSON.parse(l) as { type: string; result?: string }).find((l) => l.type === 'result');
    expect(last?.result).toBe('Wrote out.txt.');
    expect(existsSync(join(dir, 'out.txt')) && readFileSync(join(dir, 'out.txt'), 'utf8')).toBe('proxied\n');
  });

  it('both gateways recorded each streamed call with the same usage; the proxy priced it exactly', () => {
    expect(innerStore.calls).toHaveLength(2);
    expect(outerStore.calls).toHaveLength(2);
    const usage = (c: (typeof outerStore.calls)[number]) => [c.inputTokens, c.outputTokens, c.cacheReadTokens, c.cacheWriteTokens];
    expect(outerStore.calls.map(usage)).toEqual(innerStore.calls.map(usage));
    expect(outerStore.calls.map(usage)).toEqual([
      [3, 550, 0, 12_304],
      [4, 23, 2_455, 0],
    ]);
    for (const c of outerStore.calls) expect(c).toMatchObject({ jobId: 1, provider: 'anthropic', model: 'claude-sonnet-4-5', streamed: true, httpStatus: 200, usageKnown: true });
    // sonnet 4.5, USD/MTok = µ$/token: input 3, output 15, cache write (5 min) 3.75, cache read 0.30
    // (the examples: $0.054399 and $0.0010935 → 1,094 µ$ rounded half up)
    expect(outerStore.calls.map((c) => c.costMicros)).toEqual([54_399, 1_094]);
  });
});
