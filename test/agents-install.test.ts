/**
 * `flotilla agents install` end to end (issue 6, agents as plugins): a control plane (SQLite,
 * then PostgreSQL), one runner, the real Claude Code CLI against the installed agent's own
 * script. Installs from a git repository the test makes (two versions; a job records and runs
 * the version it was created with), from a plain folder, and refuses a repository with one bad
 * definition as a whole. The CLI (`--json`, exit codes) runs as a child process from dist/.
 */
import { describe, it, expect } from 'vitest';
import { cpSync, existsSync, mkdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { execFileSync } from 'node:child_process';
import type { Job } from '../src/protocol/index.js';
import { ApiError } from '../src/client/index.js';
import { createTestDatabase } from '../src/store/test-pg.js';
import { BIN, planeWithRunner, spawnFlotilla, waitFor, allEvents, type Plane } from './helpers.js';

const git = (cwd: string, ...args: string[]) => execFileSync('git', args, { cwd, encoding: 'utf8', env: { ...process.env, GIT_AUTHOR_NAME: 't', GIT_AUTHOR_EMAIL: 't@e', GIT_COMMITTER_NAME: 't', GIT_COMMITTER_EMAIL: 't@e' } }).trim();

/** Writes agent `name` (claude-code) whose scripted model answers `text` in one turn. */
function writeAgent(root: string, name: string, text: string, extra = ''): void {
  mkdirSync(join(root, name), { recursive: true });
  writeFileSync(
    join(root, name, 'agent.yaml'),
    `name: ${name}\ndescription: says ${text}\nharness: claude-code\nprompt: prompt.md\nallowedTools: [Read]\nlimits: { maxTurns: 5, timeoutSeconds: 120, defaultBudgetUsd: 1 }\n${extra}inputSchema: { type: object, additionalProperties: false, properties: { repo: { type: string } } }\n`,
  );
  writeFileSync(join(root, name, 'prompt.md'), `Say: ${text}\n`);
  writeFileSync(join(root, name, 'script.yaml'), `turns:\n  - usage: { input_tokens: 10, output_tokens: 5 }\n    content:\n      - text: "${text}"\n`);
}

/** Runs the CLI to its end: exit code and output. */
async function cli(plane: Plane, args: string[], env: NodeJS.ProcessEnv = {}): Promise<{ code: number | null; out: string }> {
  const child = spawnFlotilla(args, { FLOTILLA_SERVER: plane.url, FLOTILLA_TOKEN: plane.adminToken, ...env });
  const code = await new Promise<number | null>((r) => child.on('close', r));
  return { code, out: child.output() };
}

function suite(name: string, makeDb: () => Promise<{ url?: string; drop(): Promise<void> } | null>) {
  describe(`agents install on ${name}`, () => {
    const { dir, plane, skipped } = planeWithRunner({ database: makeDb });

    async function run(agent: string): Promise<{ job: Job; said: string[] }> {
      const created = await plane.client.createJob({ agent, input: { repo: 'examples/calc' }, budgetUsd: 1, priority: 0 });
      const job = await waitFor('job to finish', async () => {
        const j = await plane.client.getJob(created.id);
        return ['succeeded', 'failed', 'cancelled', 'lost'].includes(j.status) ? j : null;
      }, 180_000, 250);
      const said = (await allEvents(plane.store, job.id)).flatMap((e) => (e.type === 'message' && e.data.role === 'assistant' ? [e.data.text] : []));
      return { job, said };
    }

    it('installs two versions from a git repository; each job records and runs its version; --ref installs an older commit', async (ctx) => {
      if (skipped()) ctx.skip();
      const repo = join(dir, 'agents-repo');
      mkdirSync(repo);
      git(repo, 'init', '-q', '-b', 'main');
      writeAgent(repo, 'greeter', 'greeter version one');
      git(repo, 'add', '-A');
      git(repo, 'commit', '-qm', 'one');
      git(repo, 'tag', 'first');
      const c1 = git(repo, 'rev-parse', 'HEAD');

      const [v1] = await plane.client.installAgents({ source: repo });
      expect(v1).toMatchObject({ name: 'greeter', version: `v1-${c1.slice(0, 12)}`, source: repo, ref: null, commit: c1, current: true });
      const one = await run('greeter');
      expect({ status: one.job.status, error: one.job.error, agentVersion: one.job.agentVersion }).toEqual({ status: 'succeeded', error: null, agentVersion: v1!.version });
      expect(one.said).toContain('greeter version one');

      writeAgent(repo, 'greeter', 'greeter version two');
      git(repo, 'commit', '-qam', 'two');
      const c2 = git(repo, 'rev-parse', 'HEAD');
      // The CLI, from dist/: `agents install PATH --json`.
      const res = await cli(plane, ['agents', 'install', repo, '--json']);
      expect(res.code, res.out).toBe(0);
      const v2 = (JSON.parse(res.out) as { installed: { name: string; version: string; commit: string }[] }).installed;
      expect(v2).toEqual([expect.objectContaining({ name: 'greeter', version: `v2-${c2.slice(0, 12)}`, commit: c2, current: true })]);
      const two = await run('greeter');
      expect(two.job.agentVersion).toBe(`v2-${c2.slice(0, 12)}`);
      expect(two.job.status).toBe('succeeded');
      expect(two.said).toContain('greeter version two');
      expect(two.said).not.toContain('greeter version one');
      // The first job still names the version that ran.
      expect((await plane.client.getJob(one.job.id)).agentVersion).toBe(`v1-${c1.slice(0, 12)}`);

      // --ref: the tag of the first commit becomes version 3, with the first script.
      const res3 = await cli(plane, ['agents', 'install', repo, '--ref', 'first', '--json']);
      expect(res3.code, res3.out).toBe(0);
      expect(JSON.parse(res3.out)).toEqual({ installed: [expect.objectContaining({ name: 'greeter', version: `v3-${c1.slice(0, 12)}`, ref: 'first', commit: c1 })] });
      const three = await run('greeter');
      expect(three.job.agentVersion).toBe(`v3-${c1.slice(0, 12)}`);
      expect(three.said).toContain('greeter version one');

      // `flotilla agents --json` lists it with its version and source.
      const list = await cli(plane, ['agents', '--json']);
      expect(list.code, list.out).toBe(0);
      const greeter = (JSON.parse(list.out) as { agents: { name: string; version: string; installed: { source: string; ref: string | null } | null }[] }).agents.find((a) => a.name === 'greeter');
      expect(greeter).toMatchObject({ version: `v3-${c1.slice(0, 12)}`, installed: { source: repo, ref: 'first' } });
      expect((await plane.client.listAgentVersions('greeter')).map((v) => [v.version, v.current])).toEqual([
        [`v1-${c1.slice(0, 12)}`, false],
        [`v2-${c2.slice(0, 12)}`, false],
        [`v3-${c1.slice(0, 12)}`, true],
      ]);
      const table = await cli(plane, ['agents']);
      expect(table.code).toBe(0);
      expect(table.out).toMatch(new RegExp(`greeter\\s+v3-${c1.slice(0, 12)}\\s+claude-code\\s+\\S+\\s+\\S*agents-repo@first`));
    }, 600_000);

    it('installs from a plain folder: the version is the hash of its files', async (ctx) => {
      if (skipped()) ctx.skip();
      const folder = join(dir, 'plain');
      writeAgent(join(folder, 'agents'), 'echoer', 'echoer says hi');
      const [a] = await plane.client.installAgents({ source: folder });
      expect(a!.commit).toMatch(/^sha256:[0-9a-f]{64}$/);
      expect(a).toMatchObject({ name: 'echoer', version: `v1-${a!.commit.slice(7, 19)}`, source: folder, ref: null });
      // Same files → same hash; one changed byte → another.
      const [again] = await plane.client.installAgents({ source: folder });
      expect(again).toMatchObject({ version: `v2-${a!.commit.slice(7, 19)}`, commit: a!.commit });
      writeAgent(join(folder, 'agents'), 'echoer', 'echoer says hi!');
      const [changed] = await plane.client.installAgents({ source: folder });
      expect(changed!.commit).not.toBe(a!.commit);
      const ran = await run('echoer');
      expect({ status: ran.job.status, agentVersion: ran.job.agentVersion }).toEqual({ status: 'succeeded', agentVersion: changed!.version });
      expect(ran.said).toContain('echoer says hi!');
    }, 300_000);

    it('refuses a repository with one bad definition as a whole, naming the file and the field', async (ctx) => {
      if (skipped()) ctx.skip();
      const repo = join(dir, 'bad-repo');
      writeAgent(repo, 'fine-one', 'fine');
      writeAgent(repo, 'broken', 'broken', 'retries: 99\n');
      git(repo, 'init', '-q', '-b', 'main');
      git(repo, 'add', '-A');
      git(repo, 'commit', '-qm', 'bad');
      const before = await plane.client.listAgentVersions();
      const err = await plane.client.installAgents({ source: repo }).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(ApiError);
      expect((err as ApiError).status).toBe(422);
      expect((err as ApiError).code).toBe('invalid_agent');
      expect((err as ApiError).message).toMatch(/broken\/agent\.yaml: retries: /);
      expect(await plane.client.listAgentVersions()).toEqual(before);
      expect((await plane.client.listAgents()).map((a) => a.name)).not.toContain('fine-one');
      // A bad script.yaml is refused too, naming its file and field.
      writeFileSync(join(repo, 'broken', 'agent.yaml'), 'name: broken\nharness: claude-code\n');
      writeFileSync(join(repo, 'broken', 'script.yaml'), 'turns:\n  - usage: { input_tokens: -1, output_tokens: 1 }\n    content: [{ text: x }]\n');
      git(repo, 'commit', '-qam', 'bad script');
      const res = await cli(plane, ['agents', 'install', repo, '--json']);
      expect(res.code).not.toBe(0);
      expect(res.out).toMatch(/broken\/script\.yaml.*turns\.0\.usage\.input_tokens/);
      expect(await plane.client.listAgentVersions()).toEqual(before);
      // An unknown source or ref: fetch_failed, nothing stored.
      const missing = await plane.client.installAgents({ source: join(dir, 'nope') }).catch((e: unknown) => e);
      expect((missing as ApiError).code).toBe('fetch_failed');
      cpSync(repo, join(dir, 'copy'), { recursive: true });
      const badRef = await plane.client.installAgents({ source: join(dir, 'copy'), ref: 'no-such-branch' }).catch((e: unknown) => e);
      expect((badRef as ApiError).message).toMatch(/ref: no-such-branch is not a branch, tag or commit/);
      expect(await plane.client.listAgentVersions()).toEqual(before);
    }, 120_000);

    it('refuses files that lead out of the repository (../, absolute, symlink) with 422 invalid_agent; nothing stored, nothing leaked', async (ctx) => {
      if (skipped()) ctx.skip();
      const secret = join(dir, 'admin-token');
      writeFileSync(secret, 'leaked-admin-token-0451');
      const before = await plane.client.listAgentVersions();
      const cases: Array<[string, (repo: string) => void, RegExp]> = [
        ['dotdot', (repo) => writeAgent(repo, 'sneaky', 'x', `prompt: ../../../../../../../..${secret}\n`), /sneaky\/agent\.yaml: prompt: ".*admin-token" points outside the agent repository/],
        ['absolute', (repo) => writeAgent(repo, 'sneaky', 'x', `prompt: ${secret}\n`), /sneaky\/agent\.yaml: prompt: ".*admin-token" is an absolute path/],
        ['symlink', (repo) => {
          writeAgent(repo, 'sneaky', 'x');
          rmSync(join(repo, 'sneaky', 'prompt.md'));
          symlinkSync(secret, join(repo, 'sneaky', 'prompt.md'));
        }, /sneaky\/agent\.yaml: prompt: "prompt\.md" is a symlink to a file outside the agent repository/],
      ];
      for (const [kind, setup, message] of cases) {
        const repo = join(dir, `escape-${kind}`);
        setup(repo);
        // writeAgent already wrote `prompt: prompt.md`: drop it so the escaping line is the only one.
        const yaml = join(repo, 'sneaky', 'agent.yaml');
        if (kind !== 'symlink') writeFileSync(yaml, readFileSync(yaml, 'utf8').replace('prompt: prompt.md\n', ''));
        git(repo, 'init', '-q', '-b', 'main');
        git(repo, 'add', '-A');
        git(repo, 'commit', '-qm', kind);
        const err = (await plane.client.installAgents({ source: repo }).catch((e: unknown) => e)) as ApiError;
        expect(err, kind).toBeInstanceOf(ApiError);
        expect([err.status, err.code, err.field]).toEqual([422, 'invalid_agent', 'sneaky/agent.yaml']);
        expect(err.message).toMatch(message);
        expect(err.message).not.toContain('leaked-admin-token');
        const res = await cli(plane, ['agents', 'install', repo, '--json']);
        expect(res.code, res.out).toBe(1);
        // With --json the failure is one line of JSON (cli/main.ts).
        const printed = JSON.parse(res.out) as { error: { message: string; code: string; status: number } };
        expect(printed.error).toMatchObject({ code: 'invalid_agent', status: 422 });
        expect(printed.error.message).toMatch(message);
      }
      expect(await plane.client.listAgentVersions()).toEqual(before);
      const listed = await plane.client.listAgents();
      expect(listed.map((a) => a.name)).not.toContain('sneaky');
      expect(JSON.stringify(listed)).not.toContain('leaked-admin-token');
    }, 120_000);

    it('refuses to shadow a built-in folder agent unless --replace / FLOTILLA_AGENTS_REPLACE / replace: true', async (ctx) => {
      if (skipped()) ctx.skip();
      const folder = join(dir, 'shadow');
      writeAgent(folder, 'hello-codex', 'not the built-in');
      const builtIn = (await plane.client.listAgents()).find((a) => a.name === 'hello-codex')!;
      const err = (await plane.client.installAgents({ source: folder }).catch((e: unknown) => e)) as ApiError;
      expect([err.status, err.code, err.field]).toEqual([409, 'agent_exists', 'name']);
      expect(err.message).toMatch(/name: hello-codex would replace the built-in agent of the same name; install with replace: true \(CLI --replace\)/);
      const refused = await cli(plane, ['agents', 'install', folder, '--json']);
      expect(refused.code, refused.out).toBe(1);
      expect(refused.out).toMatch(/hello-codex would replace the built-in agent/);
      expect((await plane.client.listAgents()).find((a) => a.name === 'hello-codex')).toEqual(builtIn);
      expect(await plane.client.listAgentVersions('hello-codex')).toEqual([]);
      // The env var stands for the flag; once installed, later versions need no flag.
      const ok = await cli(plane, ['agents', 'install', folder, '--json'], { FLOTILLA_AGENTS_REPLACE: '1' });
      expect(ok.code, ok.out).toBe(0);
      expect((JSON.parse(ok.out) as { installed: { name: string; current: boolean }[] }).installed).toEqual([expect.objectContaining({ name: 'hello-codex', current: true })]);
      expect((await plane.client.listAgents()).find((a) => a.name === 'hello-codex')?.promptText).toBe('Say: not the built-in\n');
      const [next] = await plane.client.installAgents({ source: folder });
      expect(next).toMatchObject({ name: 'hello-codex', version: expect.stringMatching(/^v2-/), current: true });
    }, 120_000);
  });
}

if (!existsSync(BIN)) throw new Error(`${BIN} is missing: run npm run build first`);
suite('SQLite', async () => ({ url: undefined, drop: async () => {} }));
suite('PostgreSQL', async () => {
  const db = await createTestDatabase();
  if (!db && process.env.CI === 'true') throw new Error('PostgreSQL is required under CI=true');
  return db;
});
