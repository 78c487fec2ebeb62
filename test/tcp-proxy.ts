// A TCP proxy for tests that need the network between a runner and its server to stall.
import { createServer, connect, type AddressInfo, type Server, type Socket } from 'node:net';

/**
 * Forwards 127.0.0.1:<port> to `target` (host:port). {@link stall} makes it a network
 * partition: nothing is forwarded either way (data waits, as TCP retransmits it later), new
 * connections wait too, and neither side learns of the other closing; {@link heal} lets it all
 * through in order.
 */
export class TcpProxy {
  private readonly server: Server;
  private readonly sockets = new Set<Socket>();
  private stalled = false;
  /** What waits for {@link heal}, in order: writes, closes, new connections. */
  private readonly held: Array<() => void> = [];
  url = '';

  constructor(private readonly target: { host: string; port: number }) {
    this.server = createServer((client) => this.accept(client));
  }

  /** Listens on an ephemeral port; `url` is then http://127.0.0.1:<port>. */
  async listen(): Promise<this> {
    await new Promise<void>((r) => this.server.listen(0, '127.0.0.1', r));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
    return this;
  }

  /** Stops forwarding both ways (connections stay open). */
  stall(): void {
    this.stalled = true;
  }

  /** Forwards again: what waited goes through, in order, then everything as it comes. */
  heal(): void {
    this.stalled = false;
    for (const f of this.held.splice(0)) f();
  }

  async close(): Promise<void> {
    for (const s of this.sockets) s.destroy();
    await new Promise<void>((r) => this.server.close(() => r()));
  }

  /** Runs `f` now, or at {@link heal} while stalled. */
  private pass(f: () => void): void {
    if (this.stalled) this.held.push(f);
    else f();
  }

  private accept(client: Socket): void {
    this.sockets.add(client);
    client.on('error', () => undefined);
    const early: Buffer[] = [];
    let upstream: Socket | null = null;
    client.on('data', (d: Buffer) => (upstream ? this.pass(() => upstream?.write(d)) : early.push(d)));
    client.on('close', () => this.pass(() => upstream?.destroy()));
    this.pass(() => {
      if (client.destroyed) return;
      const up = connect(this.target.port, this.target.host);
      upstream = up;
      this.sockets.add(up);
      up.on('error', () => undefined);
      up.on('data', (d: Buffer) => this.pass(() => client.write(d)));
      up.on('close', () => this.pass(() => client.destroy()));
      for (const d of early.splice(0)) up.write(d);
    });
  }
}
