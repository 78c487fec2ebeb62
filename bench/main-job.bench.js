// The main job's overhead.
// 1. Wall time of `flotilla run --local test-fixer` (a whole process: store, server, gateway,
//    runner, workspace, Claude Code, cost table) vs running the same `claude -p` directly
//    against the same scripted model in an already prepared repository. Median of N each.
// 2. Time from `POST /api/jobs` to the harness process starting, on an idle local runner
//    (in-process control plane and runner), median of N.
import { spawn, execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, cpSync } from 'node:fs';
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
import { renderTemplate } from '../dist/core/template.js';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const N = Number(process.env.BENCH_RUNS ?? 5);
const CLAUDE = join(ROOT, 'node_modules', '.bin', 'claude');
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const ms = (x) => `${x.toFixed(0)} ms`;

function timed(cmd, args, opts) {
  return new Promise((res, rej) => {
    const t0 = performance.now();
    const p = spawn(cmd, args, { ...opts, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    p.stdout.on('data', (d) => (out += d));
    p.stderr.on('data', (d) => (out += d));
    p.on('exit', (code) => (code === 0 ? res(performance.now() - t0) : rej(new Error(`${cmd} exited ${code}:\n${out.slice(-2000)}`))));
  });
}

function freshCalcRepo() {
  const dir = mkdtempSync(join(tmpdir(), 'bench-calc-'));
  cpSync(join(ROOT, 'examples', 'calc'), dir, { recursive: true });
  const git = (...a) => execFileSync('git', a, { cwd: dir, stdio: 'ignore' });
  git('init', '-q');
  git('-c', 'user.name=b', '-c', 'user.email=b@b', 'add', '-A');
  git('-c', 'user.name=b', '-c', 'user.email=b@b', 'commit', '-qm', 'snapshot');
  git('checkout', '-qb', 'flotilla/job-bench');
  git('config', 'user.name', 'Flotilla');
  git('config', 'user.email', 'flotilla@localhost');
  return dir;
}

async function main() {
  const env = { ...process.env, ANTHROPIC_API_KEY: '' };

  // --- 1a. flotilla run --local, whole process ---------------------------------------------
  const local = [];
  for (let i = 0; i < N; i++) {
    const data = mkdtempSync(join(tmpdir(), 'bench-data-'));
    local.push(await timed(process.execPath, [join(ROOT, 'bin', 'flotilla.js'), 'run', '--local', 'test-fixer', '{"repo":"examples/calc"}', '--budget', '1', '--data', data], { cwd: ROOT, env }));
    rmSync(data, { recursive: true, force: true });
  }

  // --- 1b. bare claude -p against the same scripted model -----------------------------------
  const data = mkdtempSync(join(tmpdir(), 'bench-plane-'));
  const store = await openStore({ dataDir: data });
  const server = await startServer({ store, dataDir: data, port: 0, agentsDirs: [join(ROOT, 'agents')], gateway: loadGatewayConfig(env) });
  const agent = (await (await fetch(`${server.url}/api/agents`, { headers: { authorization: `Bearer ${server.adminToken}` } })).json()).agents.find((a) => a.name === 'test-fixer');
  const runnerRow = await store.createRunner({ name: 'bench-bare', labels: {}, capacity: 4, credentialHash: hashToken(newToken('flc')), now: Date.now() });
  // The fake runner row must look alive, or the liveness sweep would mark its jobs lost (and
  // kill their tokens) in the middle of the bare run.
  await store.touchRunner(runnerRow.id, Date.now());
  const beat = setInterval(() => void store.touchRunner(runnerRow.id, Date.now()), 1000);
  const bare = [];
  for (let i = 0; i < N; i++) {
    // A live job token so the gateway serves the scripted turns, exactly as for a real job.
    const job = await store.createJob({ parentId: null, agent: 'test-fixer', agentVersion: '1', input: { repo: 'examples/calc' }, selector: { bench: 'bare' }, priority: 0, budgetMicros: 1_000_000, now: Date.now() });
    const token = newToken('flj');
    await store.claimJobById(job.id, { id: runnerRow.id, labels: { bench: 'bare' } }, hashToken(token), Date.now());
    await store.transitionJob(job.id, null, ['assigned'], 'running', Date.now(), { startedAt: Date.now() });
    const repo = freshCalcRepo();
    const home = mkdtempSync(join(tmpdir(), 'bench-home-'));
    const prompt = renderTemplate(agent.promptText, { input: { repo: 'examples/calc' }, job: { id: job.id, branch: 'flotilla/job-bench' } });
    bare.push(
      await timed(CLAUDE, ['-p', prompt, '--output-format', 'stream-json', '--verbose', '--model', agent.model, '--dangerously-skip-permissions'], {
        cwd: repo,
        env: { PATH: process.env.PATH, HOME: home, IS_SANDBOX: '1', ANTHROPIC_BASE_URL: server.url, ANTHROPIC_API_KEY: token, CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1' },
      }),
    );
    rmSync(repo, { recursive: true, force: true });
    rmSync(home, { recursive: true, force: true });
  }

  clearInterval(beat);

  // --- 2. POST /api/jobs → harness process started, idle local runner ----------------------
  const runner = await startRunner({ serverUrl: server.url, registrationToken: await createRegistrationToken(store, {}, 3_600_000, Date.now()), workDir: join(data, 'runner'), repoBaseDir: ROOT });
  const client = new FlotillaClient({ url: server.url, token: server.adminToken });
  // Spawn = the runner's `progress: starting claude-code` event, stamped right before it
  // spawns the process; ready = Claude Code's `system/init` line (`harness.started`).
  const toSpawn = [];
  const toReady = [];
  for (let i = 0; i < N; i++) {
    const t0 = Date.now();
    const job = await client.createJob({ agent: 'test-fixer', input: { repo: 'examples/calc' }, priority: 0 });
    let spawnAt = null;
    let readyAt = null;
    for await (const e of client.followEvents(job.id)) {
      if (e.type === 'progress' && e.data.phase === 'harness' && e.data.message.startsWith('starting ')) spawnAt = Date.parse(e.at);
      if (e.type === 'harness.started') readyAt = Date.parse(e.at);
    }
    if (spawnAt === null || readyAt === null) throw new Error(`job ${job.id} never started its harness`);
    toSpawn.push(spawnAt - t0);
    toReady.push(readyAt - t0);
  }
  await runner.stop();
  await server.close();
  await store.close();
  rmSync(data, { recursive: true, force: true });

  const l = median(local);
  const b = median(bare);
  console.log(`runs per figure: ${N} (median)`);
  console.log(`flotilla run --local (whole process): ${ms(l)}   [${local.map(ms).join(', ')}]`);
  console.log(`bare claude -p, same scripted model:  ${ms(b)}   [${bare.map(ms).join(', ')}]`);
  console.log(`overhead ratio (flotilla / bare):     ${(l / b).toFixed(2)}x  (+${ms(l - b)})`);
  console.log(`POST /api/jobs → harness spawned:     ${ms(median(toSpawn))}   [${toSpawn.map(ms).join(', ')}]`);
  console.log(`POST /api/jobs → Claude Code ready:   ${ms(median(toReady))}   [${toReady.map(ms).join(', ')}]  (its system/init line)`);
}

main().catch((e) => {
  console.error(e);
  process.exitCode = 1;
});
