import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { openStore } from './open.js';

const here = path.dirname(fileURLToPath(import.meta.url));
const root = path.resolve(here, '../..');
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'flotilla-open-'));
const children: ChildProcess[] = [];
afterAll(() => {
  for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
  fs.rmSync(tmp, { recursive: true, force: true });
  fs.rmSync(path.join(root, 'node_modules', '.cache', 'flotilla-store-test', `open-${process.pid}.mjs`), { force: true });
});

const job = { parentId: null, agent: 'a', agentVersion: '1', input: { k: 'v' }, selector: {}, priority: 0, budgetMicros: 5, now: 1_800_000_000_000 };

/** The pid of a process that has already exited. */
async function deadPid(): Promise<number> {
  const c = spawn(process.execPath, ['-e', ''], { stdio: 'ignore' });
  await new Promise((r) => c.once('exit', r));
  return c.pid!;
}

/** Bundles open.ts (packages external) into a module a plain `node` child can import. */
async function bundleOpen(): Promise<string> {
  const outDir = path.join(root, 'node_modules', '.cache', 'flotilla-store-test');
  const outfile = path.join(outDir, `open-${process.pid}.mjs`);
  const esbuild = await import('esbuild');
  await esbuild.build({ entryPoints: [path.join(here, 'open.ts')], bundle: true, platform: 'node', format: 'esm', packages: 'external', outfile, logLevel: 'silent' });
  return outfile;
}

describe('openStore (SQLite data folder)', () => {
  it('creates the folder 0700 with flotilla.db; data survives close and reopen', async () => {
    const dir = path.join(tmp, 'a', 'data');
    const s = await openStore({ dataDir: dir });
    expect(s.dialect).toBe('sqlite');
    expect(fs.statSync(dir).mode & 0o777).toBe(0o700);
    expect(fs.existsSync(path.join(dir, 'flotilla.db'))).toBe(true);
    expect(fs.readFileSync(path.join(dir, 'flotilla.lock'), 'utf8').trim().split(' ')[0]).toBe(String(process.pid)); // the pid, then its start time (core/pid-lock.ts)
    const j = await s.createJob(job);
    await s.close();
    await s.close(); // idempotent
    expect(fs.existsSync(path.join(dir, 'flotilla.lock'))).toBe(false);
    const again = await openStore({ dataDir: dir });
    expect(await again.getJob(j.id)).toEqual(j);
    await again.close();
  });

  it('the database and its WAL files are owner-only (0600), also in a folder made 0755 beforehand and for a file made 0644', async () => {
    const dir = path.join(tmp, 'pre-made');
    fs.mkdirSync(dir, { mode: 0o755 });
    fs.chmodSync(dir, 0o755);
    const s = await openStore({ dataDir: dir });
    await s.createJob(job); // writes, so -wal and -shm exist
    for (const f of ['flotilla.db', 'flotilla.db-wal', 'flotilla.db-shm']) expect([f, fs.statSync(path.join(dir, f)).mode & 0o777]).toEqual([f, 0o600]);
    await s.close();
    fs.chmodSync(path.join(dir, 'flotilla.db'), 0o644); // an older install's file
    const again = await openStore({ dataDir: dir });
    expect(fs.statSync(path.join(dir, 'flotilla.db')).mode & 0o777).toBe(0o600);
    await again.close();
  });

  it('refuses a second open of the same folder in this process until the first closes', async () => {
    const dir = path.join(tmp, 'b');
    const s = await openStore({ dataDir: dir });
    await expect(openStore({ dataDir: dir })).rejects.toThrow(`data folder ${dir} is in use by process ${process.pid} (this process)`);
    await s.close();
    const t = await openStore({ dataDir: dir });
    await t.close();
  });

  it('takes over a lock left by a dead process', async () => {
    const dir = path.join(tmp, 'c');
    fs.mkdirSync(dir, { recursive: true });
    fs.writeFileSync(path.join(dir, 'flotilla.lock'), `${await deadPid()}\n`);
    const s = await openStore({ dataDir: dir });
    expect(fs.readFileSync(path.join(dir, 'flotilla.lock'), 'utf8').trim().split(' ')[0]).toBe(String(process.pid)); // the pid, then its start time (core/pid-lock.ts)
    await s.close();
  });

  it('refuses a folder held by another live process, naming its pid; takes it over once it is killed', async () => {
    const dir = path.join(tmp, 'd');
    const mod = await bundleOpen();
    const script = `
      const { openStore } = await import(${JSON.stringify(mod)});
      const s = await openStore({ dataDir: ${JSON.stringify(dir)} });
      const j = await s.createJob(${JSON.stringify(job)});
      console.log('ready ' + j.id);
      setInterval(() => {}, 1000);
    `;
    const child = spawn(process.execPath, ['--input-type=module', '-e', script], { stdio: ['ignore', 'pipe', 'inherit'], cwd: root });
    children.push(child);
    const jobId = await new Promise<number>((resolve, reject) => {
      let out = '';
      child.stdout!.on('data', (b: Buffer) => {
        out += b.toString();
        const m = /ready (\d+)/.exec(out);
        if (m) resolve(Number(m[1]));
      });
      child.once('exit', (code) => reject(new Error(`child exited ${code} before ready: ${out}`)));
    });
    await expect(openStore({ dataDir: dir })).rejects.toThrow(`data folder ${dir} is in use by process ${child.pid}`);
    child.kill('SIGKILL');
    await new Promise((r) => (child.exitCode !== null || child.signalCode !== null ? r(null) : child.once('exit', r)));
    const s = await openStore({ dataDir: dir });
    expect(await s.getJob(jobId)).toMatchObject({ id: jobId, input: { k: 'v' }, status: 'queued' });
    await s.close();
  });

  it('rejects a databaseUrl that is not PostgreSQL, naming the field', async () => {
    await expect(openStore({ dataDir: path.join(tmp, 'e'), databaseUrl: 'mysql://u:pw@h/db' })).rejects.toThrow(/DATABASE_URL must start with postgres/);
  });
});
