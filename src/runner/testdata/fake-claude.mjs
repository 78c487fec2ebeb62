#!/usr/bin/env node
/* global process, setTimeout, setInterval, console */
// A stand-in for the `claude` CLI in runner tests: prints Claude Code stream-json lines.
// The scenario comes from the prompt (the argument after `--`): "SCENARIO=<name>[:<arg>]".
// It records its argv, environment and pid in $HOME/fake-invocation.json.
import { spawn, execFileSync } from 'node:child_process';
import { appendFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

const args = process.argv.slice(2);
const prompt = args[args.indexOf('--') + 1] ?? '';
const [scenario, arg] = (/SCENARIO=([\w:-]+)/.exec(prompt)?.[1] ?? 'basic').split(':');
const home = process.env.HOME;
writeFileSync(join(home, 'fake-invocation.json'), JSON.stringify({ argv: args, env: process.env, pid: process.pid, cwd: process.cwd() }));

const session = 'sess-fake-1';
const out = (obj) => process.stdout.write(JSON.stringify(obj) + '\n');
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const init = () => out({ type: 'system', subtype: 'init', cwd: process.cwd(), session_id: session, tools: ['Bash'], model: 'fake' });
const usage = (i, o) => ({ input_tokens: i, output_tokens: o, cache_read_input_tokens: 0, cache_creation_input_tokens: 0 });
const text = (id, t) => out({ type: 'assistant', message: { id, model: 'fake', role: 'assistant', content: [{ type: 'text', text: t }], usage: usage(10, 5) }, session_id: session });
const result = (subtype, r, isError = false) =>
  out({ type: 'result', subtype, is_error: isError, num_turns: 2, result: r, session_id: session, total_cost_usd: 0.001, usage: usage(20, 10) });

async function main() {
  switch (scenario) {
    case 'basic': {
      init();
      text('msg_1', 'Looking at the tests.');
      // One JSON line written in two pieces, 30 ms apart: the runner must join them.
      const call = JSON.stringify({
        type: 'assistant',
        message: { id: 'msg_1', model: 'fake', content: [{ type: 'tool_use', id: 'toolu_1', name: 'Bash', input: { command: 'npm test' } }], usage: usage(10, 5) },
        session_id: session,
      });
      process.stdout.write(call.slice(0, 40));
      await sleep(30);
      process.stdout.write(call.slice(40) + '\n');
      out({ type: 'user', message: { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_1', content: '# pass 3\n# fail 1', is_error: true }] }, session_id: session });
      process.stdout.write('this line is not json\n');
      appendFileSync('calc.js', '// fixed\n');
      execFileSync('git', ['commit', '-q', '-am', 'fix calc'], { stdio: 'ignore' });
      writeFileSync('notes.txt', 'untracked\n');
      process.stderr.write('a warning on stderr\n');
      text('msg_2', 'Fixed the off-by-one. All tests pass.');
      result('success', 'Fixed the off-by-one. All tests pass.');
      return 0;
    }
    case 'many': {
      init();
      const n = Number(arg ?? 50);
      for (let i = 1; i <= n; i++) {
        text(`msg_${i}`, `m${i}`);
        await sleep(4);
      }
      result('success', `sent ${n}`);
      return 0;
    }
    case 'sleep': {
      // Ignores SIGTERM when asked to, so only SIGKILL ends it; its grandchild is a `sleep`.
      if (arg === 'ignore-term') process.on('SIGTERM', () => {});
      const child = spawn('sleep', ['300'], { stdio: 'ignore' });
      writeFileSync(join(home, 'pids.json'), JSON.stringify({ leader: process.pid, grandchild: child.pid }));
      init();
      out({ type: 'assistant', message: { id: 'msg_1', model: 'fake', content: [{ type: 'tool_use', id: 'toolu_1', name: 'Bash', input: { command: 'sleep 300' } }], usage: usage(1, 1) }, session_id: session });
      setInterval(() => {}, 1000);
      await new Promise(() => {});
      return 0;
    }
    case 'ticks': {
      // A message every 20 ms, `arg` of them (default 100), then success; pids.json as for sleep.
      writeFileSync(join(home, 'pids.json'), JSON.stringify({ leader: process.pid }));
      init();
      const n = Number(arg ?? 100);
      for (let i = 1; i <= n; i++) {
        text(`msg_${i}`, `tick ${i}`);
        await sleep(20);
      }
      result('success', `ticked ${n}`);
      return 0;
    }
    case 'straggler': {
      // Exits normally but leaves a grandchild holding stdout open.
      const child = spawn('sleep', ['300'], { stdio: ['ignore', 'inherit', 'inherit'] });
      writeFileSync(join(home, 'pids.json'), JSON.stringify({ leader: process.pid, grandchild: child.pid }));
      child.unref();
      init();
      result('success', 'done, but left a straggler');
      return 0;
    }
    case 'max-turns':
      init();
      result('error_max_turns', undefined, true);
      return 1;
    case 'crash':
      init();
      for (let i = 1; i <= 3; i++) process.stderr.write(`boom ${i}\n`);
      return 3;
    default:
      console.error(`unknown scenario ${scenario}`);
      return 2;
  }
}

main().then((code) => process.exit(code));
