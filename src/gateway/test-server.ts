import { serve } from '@hono/node-server';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, beforeEach } from 'vitest';
import type { JobRow } from '../store/types.js';
import type { GatewayConfig } from './config.js';
import { createGateway, type Gateway, type GatewayOptions, type GatewayStore } from './gateway.js';
import { MemoryGatewayStore } from './memory-store.js';
import { loadPriceTable } from './prices.js';
import { fakeUpstream, type FakeAnswer, type FakeReply, type FakeUpstream, type SeenRequest } from './test-upstream.js';

// Servers for tests on ephemeral ports of 127.0.0.1: any fetch or node:http handler, the
// gateway in front of a fake upstream (startGateway), and one server shared by a file's tests.

/** A running HTTP server for tests: its base URL (http://127.0.0.1:<port>) and a close(). */
export interface TestServer {
  url: string;
  close(): Promise<void>;
}

/** Serves a fetch handler (e.g. a Hono app's `fetch`) on an ephemeral port of 127.0.0.1. */
export async function listen(fetch: (req: Request) => Response | Promise<Response>): Promise<TestServer> {
  const server = serve({ fetch, port: 0, hostname: '127.0.0.1' });
  await new Promise<void>((resolve, reject) => {
    server.once('listening', () => resolve());
    server.once('error', reject);
  });
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    close: () =>
      new Promise<void>((resolve) => {
        (server as unknown as { closeAllConnections?: () => void }).closeAllConnections?.();
        server.close(() => resolve());
      }),
  };
}

/**
 * Serves a plain node:http handler (e.g. a gateway's `node`, the path the control plane serves
 * /v1/* with) on an ephemeral port of 127.0.0.1; same shape as {@link listen}.
 */
export async function listenNode(handler: (req: IncomingMessage, res: ServerResponse) => void): Promise<TestServer> {
  const server = createServer(handler);
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** What {@link startGateway} starts: every field optional, the defaults being the common set-up. */
export interface GatewayStart<S extends GatewayStore = MemoryGatewayStore> {
  /**
   * The upstream every provider of the gateway calls. A function: a {@link fakeUpstream}
   * answering with it, started and closed with the gateway. A running {@link FakeUpstream}
   * (another gateway's `up`, a `deadUpstream()`): used as is and left running. Absent: a fake
   * upstream answering what {@link TestGateway.setReply} set last (`{}` at first).
   */
  upstream?: ((req: SeenRequest) => FakeAnswer) | FakeUpstream;
  /** Where the gateway records and reserves (default a fresh {@link MemoryGatewayStore}). */
  store?: S;
  /**
   * The job `post` speaks for, by its token. On a MemoryGatewayStore it is added as running
   * with the other fields (`id`, `budgetMicros`, ...; the rest MemoryGatewayStore.addJob's
   * defaults, so a second gateway over the same store leaves it out and posts with
   * `init.token`); a real store must hold it already (`runningJob`, test-stores.ts).
   */
  job?: { token: string } & Partial<JobRow>;
  /**
   * Serves the OpenAI wire formats too, from the same upstream at `<url>/v1`, through this
   * provider (`openai` with key `sk-oai-server`, `openai-compatible` without one); models
   * `claude-*` then route to anthropic and `gpt-*` to it.
   */
  openai?: 'openai' | 'openai-compatible';
  /** Settings over the defaults: provider `anthropic` with key `sk-server` at the upstream, the shipped prices, no upstream retries. */
  config?: Partial<GatewayConfig>;
  /** The adapter it is served through: `node` (node:http, what the control plane serves; the default) or `fetch` (the web adapter). */
  via?: 'node' | 'fetch';
  onBudgetExhausted?: GatewayOptions['onBudgetExhausted'];
  log?: GatewayOptions['log'];
}

/** How {@link TestGateway.post} sends: fetch's options, `headers` added to (or replacing) the defaults, `token` instead of the job's. */
export type PostInit = Omit<RequestInit, 'method' | 'headers' | 'body'> & { headers?: Record<string, string>; token?: string };

/** A gateway started by {@link startGateway}: its server (`url`, `close()` also closes an upstream it started), app, store and upstream. */
export interface TestGateway<S extends GatewayStore = MemoryGatewayStore> extends TestServer {
  app: Gateway;
  store: S;
  up: FakeUpstream;
  /** What the upstream answers from now on (only for a gateway started without `upstream`). */
  setReply(r: FakeReply): void;
  /**
   * POSTs `body` (text, bytes, or an object sent as JSON) to `path` with content-type JSON and
   * the job's token as both `x-api-key` and `Authorization: Bearer`; resolves with the reply unread.
   */
  post(path: string, body: string | Uint8Array | object, init?: PostInit): Promise<Response>;
  /** Forgets what earlier tests left: a memory store's recorded calls (and `held` reservations), the upstream's `seen`. Budgets stay. */
  reset(): void;
}

/**
 * The gateway under test, on a real port in front of a real fake upstream: the common set-up of
 * the gateway's HTTP tests, each stating only what is particular to it (see {@link GatewayStart}).
 * Per test, or shared by a file's tests with {@link forFile}.
 */
export async function startGateway<S extends GatewayStore = MemoryGatewayStore>(o: GatewayStart<S> = {}): Promise<TestGateway<S>> {
  let next: FakeReply = { body: '{}' };
  const given = o.upstream;
  const up = given && typeof given !== 'function' ? given : await fakeUpstream(given ?? (() => next));
  const store = o.store ?? (new MemoryGatewayStore() as unknown as S);
  const { token, ...fields } = o.job ?? { token: undefined };
  if (token !== undefined && store instanceof MemoryGatewayStore) store.addJob(token, fields);
  const openai = o.openai && {
    openai: { provider: o.openai, baseUrl: up.url + '/v1', apiKeys: o.openai === 'openai' ? ['sk-oai-server'] : [] },
    modelProviders: [
      { pattern: 'claude-*', provider: 'anthropic' as const },
      { pattern: 'gpt-*', provider: o.openai },
    ],
  };
  const config: GatewayConfig = { provider: 'anthropic', anthropicApiKey: 'sk-server', anthropicBaseUrl: up.url, ...openai, prices: loadPriceTable(), retry: { retries: 0 }, ...o.config };
  const app = createGateway({ store, config, scriptFor: async () => null, onBudgetExhausted: o.onBudgetExhausted, log: o.log });
  const server = o.via === 'fetch' ? await listen(app.fetch) : await listenNode((req, res) => app.node(req, res));
  return {
    url: server.url,
    app,
    store,
    up,
    setReply: (r) => {
      if (given) throw new Error('this gateway\'s upstream answers through the function it was started with');
      next = r;
    },
    post: (path, body, { token: as = token, headers, ...init } = {}) => {
      if (as === undefined) throw new Error('post: no token (start the gateway with a job, or pass init.token)');
      const sent = typeof body === 'string' ? body : body instanceof Uint8Array ? new Uint8Array(body) : JSON.stringify(body);
      return fetch(server.url + path, { ...init, method: 'POST', headers: { 'content-type': 'application/json', 'x-api-key': as, authorization: `Bearer ${as}`, ...headers }, body: sent });
    },
    reset: () => {
      if (store instanceof MemoryGatewayStore) store.calls.length = 0;
      const held = (store as { held?: unknown }).held;
      if (Array.isArray(held)) held.length = 0;
      up.seen.length = 0;
    },
    close: async () => {
      await server.close();
      if (up !== given) await up.close();
    },
  };
}

/**
 * One server for all of a file's tests: `start()` runs before them (beforeAll), `close()` after
 * them, `reset()` (when it has one) before each. @returns a stand-in that gets the started
 * object's properties once started: use it inside tests and hooks, not at the file's top level.
 */
export function forFile<T extends { close(): Promise<void>; reset?(): void }>(start: () => Promise<T>): T {
  const started = {} as T;
  beforeAll(async () => void Object.assign(started, await start()));
  afterAll(() => started.close?.());
  beforeEach(() => started.reset?.());
  return started;
}
