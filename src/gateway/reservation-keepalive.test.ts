/**
 * A call that outlasts its reservation's TTL keeps its reservation (issue 3, a fresh user's
 * finding): the sweeper used to give a live stream's micros back after the TTL, so the tree could
 * spend them twice. Real SQLite store, real HTTP upstream streaming for 3.5 s, TTL 1.5 s, the
 * sweep run every 200 ms meanwhile.
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { expect, it } from 'vitest';
import { hashToken } from '../core/tokens.js';
import { createGateway } from './gateway.js';
import { loadPriceTable } from './prices.js';
import { onSqlite } from './test-stores.js';

const TOKEN = 'flj_keepalive_0123456789abcdefghij';
const ev = (type: string, data: object) => `event: ${type}\ndata: ${JSON.stringify({ type, ...data })}\n\n`;

it('a stream longer than the reservation TTL keeps its reservation until it settles; the sweep releases nothing meanwhile', async () => {
  await onSqlite(async ([store]) => {
    const now = Date.now();
    const runner = await store!.createRunner({ name: 'r', labels: {}, capacity: 1, credentialHash: 'c'.repeat(64), now });
    const job = await store!.createJob({ parentId: null, agent: 'a', agentVersion: '1', input: {}, selector: {}, priority: 0, budgetMicros: 5_000_000, now });
    await store!.claimJob({ id: runner.id, labels: {} }, hashToken(TOKEN), now);
    await store!.transitionJob(job.id, 1, ['assigned'], 'running', now, { startedAt: now });
    const up = createServer((req, res) => {
      req.resume();
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write(ev('message_start', { message: { id: 'm', type: 'message', role: 'assistant', model: 'claude-sonnet-4-5', content: [], usage: { input_tokens: 100, output_tokens: 1 } } }));
      let i = 0;
      const t = setInterval(() => {
        if (++i < 35) return void res.write(ev('content_block_delta', { index: 0, delta: { type: 'text_delta', text: 'x' } }));
        clearInterval(t);
        res.write(ev('message_delta', { delta: { stop_reason: 'end_turn' }, usage: { output_tokens: 20 } }));
        res.end(ev('message_stop', {}));
      }, 100);
    });
    await new Promise<void>((r) => up.listen(0, '127.0.0.1', r));
    const gw = createGateway({ store: store!, config: { provider: 'anthropic', anthropicApiKey: 'k', anthropicBaseUrl: `http://127.0.0.1:${(up.address() as AddressInfo).port}`, prices: loadPriceTable(), reservationTtlMs: 1500 }, scriptFor: async () => null });
    const server = createServer((req, res) => gw.node(req, res));
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const released: number[] = [];
    const sweep = setInterval(() => void store!.releaseExpiredReservations(Date.now()).then((r) => released.push(...r.map((x) => x.releasedMicros))), 200);
    try {
      const res = await fetch(`http://127.0.0.1:${(server.address() as AddressInfo).port}/v1/messages`, { method: 'POST', headers: { 'content-type': 'application/json', 'x-api-key': TOKEN }, body: JSON.stringify({ model: 'claude-sonnet-4-5', max_tokens: 1000, stream: true, messages: [{ role: 'user', content: 'hi' }] }) });
      const t0 = Date.now();
      expect(await res.text()).toContain('message_stop');
      expect(Date.now() - t0).toBeGreaterThan(3000); // past two TTLs
      expect(released).toEqual([]);
      // settled to the real cost: 100 × 3 + 20 × 15 µ$ = 600 µ$, nothing left reserved
      expect(await store!.getTreeBudget(job.rootId, Date.now())).toMatchObject({ spentMicros: 600, reservedMicros: 0 });
    } finally {
      clearInterval(sweep);
      server.closeAllConnections();
      up.closeAllConnections();
      await new Promise<void>((r) => server.close(() => r()));
      await new Promise<void>((r) => up.close(() => r()));
    }
  });
});
