/**
 * `flotilla models set PATTERN PROVIDER` on a server with no default route warns that a model no
 * route matches is refused, naming every route in force (the file's and the API's), not only the
 * one just set as "e.g. other than PATTERN … now refused" (fresh-tester finding: other routes still
 * served). Against a real server (SQLite, HTTP).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../src/server/test-helpers.js';
import { runCli } from '../src/cli/test-io.js';

let t: TestServer;
const saved = { ...process.env };
const run = (...args: string[]) => runCli([...args, '--server', t.url, '--token', t.admin]);

beforeAll(async () => {
  for (const k of Object.keys(process.env)) if (k.startsWith('FLOTILLA_')) delete process.env[k];
  t = await startTestServer();
});
afterAll(async () => {
  process.env = { ...saved };
  await t.close();
});

describe('models set without a default route', () => {
  it('names every route in force; none once a default is set', async () => {
    const first = await run('models', 'set', 'scr*', 'scripted');
    expect([first.code, first.out, first.err]).toEqual([0, 'route set: scr* → scripted\n', 'warning: no default route: a model matching none of the routes (scr*) is refused as unknown; set one with `flotilla models default PROVIDER`\n']);
    const second = await run('models', 'set', 'claude-*', 'scripted');
    expect(second.err).toBe('warning: no default route: a model matching none of the routes (claude-*, scr*) is refused as unknown; set one with `flotilla models default PROVIDER`\n');
    expect((await run('models', 'default', 'scripted')).code).toBe(0);
    expect((await run('models', 'set', 'gpt-*', 'scripted')).err).toBe('');
  });
});
