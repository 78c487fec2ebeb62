import { serve } from '@hono/node-server';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

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
