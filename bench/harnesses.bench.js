// Issue 4: per harness (claude-code, codex, command in Python), on the same small task and the same
// scripted model ("make out.txt containing hello, then say done", two model turns):
// 1. start-up time to the first model call: process spawn → its first model reply shown
//    (Claude Code's first `assistant` line, Codex's first `item.started`, the Python agent's
//    first `tool.call` line), for
//    the bare CLI and through Flotilla (the runner's `starting <harness>` progress event →
//    the first `tool.call` event);
// 2. Flotilla's overhead over the bare CLI: POST /api/jobs → job ended, vs the bare process
//    run to its exit against the same gateway with a live job token. Median of N each.
import { spawn, execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { openStore } from '../dist/store/open.js';
import { startServer } from '../dist/server/server.js';
import { createRegistrationToken } from '../dist/server/auth.js';
import { startRunner } from '../dist/runner/runner.js';
import { FlotillaClient } from '../dist/client/client.js';
import { loadGatewayConfig } from '../dist/gateway/config.js';
import { hashToken, newToken } from '../dist/core/tokens.js';
import { codexConfig, defaultCodexPath } from '../dist/runner/harness/codex.js';
import { writeFileSync, mkdirSync } from 'node:fs';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const N = Number(process.env.BENCH_RUNS ?? 5);
const CLAUDE = join(ROOT, 'node_modules', '.bin', 'claude');
const PY_AGENT = join(ROOT, 'test', 'fixtures', 'agents', 'hello-py', 'agent.py');
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const ms = (x) => `${x.toFixed(0)} ms`;

/** Runs a process to exit; returns { total, first } ms (first = the first stdout line matching `firstRe`). */
function timed(cmd, args, opts, stdin, firstRe) {
  return new Promise((res, rej) => {
    const t0 = performance.now();
    let first = null;
    const p = spawn(cmd, args, { ...opts, stdio: [stdin === undefined ? 'ignore' : 'pipe', 'pipe', 'pipe'] });
    if (stdin !== undefined) p.stdin.end(stdin);
    let out = '';
    p.stdout.on('data', (d) => {
      out += d;
      if (first === null && firstRe.test(out)) first = performance.now() - t0;
    });
    p.stderr.on('data', (d) => (out += d));
    p.on('exit', (code) => (code === 0 ? res({ total: performance.now() - t0, first }) : rej(new Error(`${cmd} exited ${code}:\n${out.slice(-2000)}`))));
  });
}

function emptyRepo() {
  const dir = mkdtempSync(join(tmpdir(), 'bench-ws-'));
  const git = (...a) => execFileSync('git', a, { cwd: dir, stdio: 'ignore' });
  git('init', '-q');
  git('-c', 'user.name=b', '-c', 'user.email=b@b', 'commit', '-q', '--allow-empty', '-m', 'empty');
  return dir;
}

async function main() {
  const env = { ...process.env, ANTHROPIC_API_KEY: '' };
  const data = mkdtempSync(join(tmpdir(), 'bench-plane-'));
  const store = await openStore({ dataDir: data });
  const agentsDirs = [join(ROOT, 'agents'), join(ROOT, 'test', 'fixtures', 'agents')];
  const server = await startServer({ store, dataDir: data, port: 0, agentsDirs, gateway: loadGatewayConfig(env) });
  const agents = (await (await fetch(`${server.url}/api/agents`, { headers: { authorization: `Bearer ${server.adminToken}` } })).json()).agents;
  const runnerRow = await store.createRunner({ name: 'bench-bare', labels: {}, capacity: 4, credentialHash: hashToken(newToken('flc')), now: Date.now() });
  await store.touchRunner(runnerRow.id, Date.now());
  const beat = setInterval(() => void store.touchRunner(runnerRow.id, Date.now()), 1000);
  const liveToken = async (agent) => {
    const job = await store.createJob({ parentId: null, agent, agentVersion: '1', input: {}, selector: { bench: 'bare' }, priority: 0, budgetMicros: 1_000_000, now: Date.now() });
    const token = newToken('flj');
    await store.claimJobById(job.id, { id: runnerRow.id, labels: { bench: 'bare' } }, hashToken(token), Date.now());
    await store.transitionJob(job.id, null, ['assigned'], 'running', Date.now(), { startedAt: Date.now() });
    return { token, jobId: job.id };
  };

  const results = {};
  for (const name of ['hello-claude', 'hello-codex', 'hello-py']) {
    const agent = agents.find((a) => a.name === name);
    const bare = [];
    for (let i = 0; i < N; i++) {
      const { token, jobId } = await liveToken(name);
      const ws = emptyRepo();
      const home = mkdtempSync(join(tmpdir(), 'bench-home-'));
      const e = { PATH: process.env.PATH, HOME: home, IS_SANDBOX: '1', ANTHROPIC_BASE_URL: server.url, ANTHROPIC_API_KEY: token, CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1', PYTHONUNBUFFERED: '1' };
      if (name === 'hello-claude') {
        bare.push(await timed(CLAUDE, ['-p', '--output-format', 'stream-json', '--verbose', '--model', agent.model, '--max-turns', '5', '--dangerously-skip-permissions', '--tools', 'Bash', '--', agent.promptText], { cwd: ws, env: e }, undefined, /"type":"assistant"/));
      } else if (name === 'hello-codex') {
        const codexHome = join(home, '.codex');
        mkdirSync(codexHome, { recursive: true });
        writeFileSync(join(codexHome, 'config.toml'), codexConfig({ serverUrl: server.url, agent, home }));
        bare.push(await timed(defaultCodexPath(), ['exec', '--json', '--sandbox', 'workspace-write', '--skip-git-repo-check', '--', agent.promptText], { cwd: ws, env: { ...e, CODEX_HOME: codexHome, OPENAI_API_KEY: token } }, undefined, /"type":"item\.started"/));
      } else {
        const input = { job: { id: jobId, rootId: jobId, attempt: 1, branch: 'b' }, agent: { name, version: '1', model: agent.model, effort: null, allowedTools: ['Bash'], limits: agent.limits, readOnly: false }, input: {}, prompt: agent.promptText, workspace: ws, resumeSessionId: null };
        bare.push(await timed('python3', [PY_AGENT], { cwd: ws, env: e }, JSON.stringify(input), /"type": "tool\.call"/));
      }
      rmSync(ws, { recursive: true, force: true });
      rmSync(home, { recursive: true, force: true });
    }
    results[name] = { bare };
  }
  clearInterval(beat);

  const runner = await startRunner({ serverUrl: server.url, registrationToken: await createRegistrationToken(store, {}, 3_600_000, Date.now()), workDir: join(data, 'runner'), repoBaseDir: ROOT });
  const client = new FlotillaClient({ url: server.url, token: server.adminToken });
  for (const name of ['hello-claude', 'hello-codex', 'hello-py']) {
    const total = [];
    const first = [];
    for (let i = 0; i < N; i++) {
      const t0 = performance.now();
      const job = await client.createJob({ agent: name, input: {}, priority: 0 });
      let spawnAt = null;
      let callAt = null;
      for await (const e of client.followEvents(job.id)) {
        if (e.type === 'progress' && e.data.phase === 'harness' && e.data.message.startsWith('starting ')) spawnAt = Date.parse(e.at);
        if (e.type === 'tool.call' && callAt === null) callAt = Date.parse(e.at);
      }
      total.push(performance.now() - t0);
      const j = await client.getJob(job.id);
      if (j.status !== 'succeeded' || spawnAt === null || callAt === null) throw new Error(`job ${job.id} (${name}) ended ${j.status}: ${j.error}`);
      first.push(callAt - spawnAt);
    }
    results[name].flotilla = { total, first };
  }
  await runner.stop();
  await server.close();
  await store.close();
  rmSync(data, { recursive: true, force: true });

  console.log(`runs per figure: ${N} (median)`);
  for (const [name, r] of Object.entries(results)) {
    const bt = median(r.bare.map((x) => x.total));
    const bf = median(r.bare.map((x) => x.first));
    const ft = median(r.flotilla.total);
    const ff = median(r.flotilla.first);
    console.log(`${name}:`);
    console.log(`  start-up to first model reply, bare CLI:   ${ms(bf)}   [${r.bare.map((x) => ms(x.first)).join(', ')}]`);
    console.log(`  start-up to first model reply, via runner: ${ms(ff)}   [${r.flotilla.first.map(ms).join(', ')}]`);
    console.log(`  whole run, bare CLI:                       ${ms(bt)}   [${r.bare.map((x) => ms(x.total)).join(', ')}]`);
    console.log(`  whole job via Flotilla (POST → ended):     ${ms(ft)}   [${r.flotilla.total.map(ms).join(', ')}]`);
    console.log(`  overhead ratio (Flotilla / bare):          ${(ft / bt).toFixed(2)}x  (+${ms(ft - bt)})`);
  }
}

main().catch((e) => {
  console.error(e);
  process.exitCode = 1;
});
