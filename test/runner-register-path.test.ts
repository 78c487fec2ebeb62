import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { register } from '../src/runner/credential.js';
import { startTestServer, type TestServer } from '../src/server/test-helpers.js';

/** `--server` with a path that is not the control plane's base: the error says so (a real control plane, a real registration token). */
describe('registering at the control plane with a wrong path', () => {
  let t: TestServer;
  beforeAll(async () => {
    t = await startTestServer();
  });
  afterAll(() => t.close());

  it('/api (an API route wanting an API token: 401) and /foo (no route: 404) name the path and the base URL; a bad token at the right URL gets no hint', async () => {
    const req = async () => ({ token: await t.regToken(), name: 'box', labels: {}, capacity: 1 });
    const origin = new URL(t.url).origin;
    await expect(register(`${origin}/api`, await req())).rejects.toThrow(
      new Error(`runner registration at ${origin}/api failed (HTTP 401): missing API token: send Authorization: Bearer <token>, or sign in (--server ${origin}/api has the path /api: give the control plane's base URL, the one \`flotilla up\` prints, such as ${origin})`),
    );
    await expect(register(`${origin}/foo/`, await req())).rejects.toThrow(/failed \(HTTP 404\): .* \(--server \S+\/foo\/ has the path \/foo: give the control plane's base URL/);
    await expect(register(origin, { token: 'flr_not_a_real_token_0123456789', name: 'box', labels: {}, capacity: 1 })).rejects.toThrow(
      new Error(`runner registration at ${origin} failed (HTTP 401): registration token is unknown, already used, expired or revoked`),
    );
  });
});
