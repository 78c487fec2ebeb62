/**
 * The ports the Fetch standard blocks ("bad ports", https://fetch.spec.whatwg.org/#port-blocking):
 * browsers and Node's `fetch` (undici) refuse to connect to them, so a control plane listening on
 * one is unreachable from the dashboard, the CLI and the runners' registration.
 */
export const FETCH_BLOCKED_PORTS: ReadonlySet<number> = new Set([
  0, 1, 7, 9, 11, 13, 15, 17, 19, 20, 21, 22, 23, 25, 37, 42, 43, 53, 69, 77, 79, 87, 95, 101, 102, 103, 104, 109, 110, 111, 113, 115, 117, 119, 123, 135, 137,
  139, 143, 161, 179, 389, 427, 465, 512, 513, 514, 515, 526, 530, 531, 532, 540, 548, 554, 556, 563, 587, 601, 636, 989, 990, 993, 995, 1719, 1720, 1723, 2049,
  3659, 4045, 4190, 5060, 5061, 6000, 6566, 6665, 6666, 6667, 6668, 6669, 6679, 6697, 10080,
]);

/**
 * Refuses a listening port that clients could not reach (port 0, "any free port", is allowed).
 * @throws Error naming the port and why, before the server binds it.
 */
export function assertReachablePort(port: number): void {
  if (port !== 0 && FETCH_BLOCKED_PORTS.has(port)) {
    throw new Error(`port ${port} is one the Fetch standard blocks: browsers and Node's fetch refuse to connect to it, so the dashboard, the CLI and runners could not reach this server; choose another port (e.g. 8787)`);
  }
}
