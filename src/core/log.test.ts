import { describe, expect, it } from 'vitest';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { createLogger } from './log.js';
import { turnBatchedLines } from './log-sink.js';

const LINE = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z (debug|info|warn|error) /;

describe('createLogger', () => {
  it('writes `<iso time> <level> <message> key=value ...`, values as JSON, base fields first and overridden in place', () => {
    const lines: string[] = [];
    const log = createLogger('info', (l) => void lines.push(l), { job: 7, runner: 'r1' }).child({ attempt: 2 });
    log.debug('not written');
    log.info('gateway: model call', { runner: 'r2', model: 'a "b"\n', n: 12, f: 0.5, neg: -0, nan: Number.NaN, inf: Infinity, ok: true, no: false, gone: undefined, none: null, obj: { a: [1] } });
    log.error('bare');
    expect(lines).toHaveLength(2);
    expect(lines[0]).toMatch(LINE);
    // each value as JSON.stringify gives it (NaN and Infinity as null, undefined as null)
    expect(lines[0]!.replace(LINE, '')).toBe('gateway: model call job=7 runner="r2" attempt=2 model="a \\"b\\"\\n" n=12 f=0.5 neg=0 nan=null inf=null ok=true no=false gone=null none=null obj={"a":[1]}\n');
    expect(lines[1]!.replace(LINE, '')).toBe('bare job=7 runner="r1" attempt=2\n');
  });

  it('masks tokens and keys wherever they are (message, field names, values)', () => {
    const lines: string[] = [];
    const log = createLogger('debug', (l) => void lines.push(l));
    log.warn('token flj_abcdefghijkl seen', { key: 'sk-ant-1234567890', header: 'Bearer abcdefghijkl', n: 1 });
    expect(lines[0]!.replace(LINE, '')).toBe('token flj_*** seen key="sk-***" header="Bearer ***" n=1\n');
  });

  it('a field named like an Object.prototype member is a field like any other', () => {
    const lines: string[] = [];
    createLogger('info', (l) => void lines.push(l), { constructor: 'c' }).info('m', { toString: 1 });
    expect(lines[0]!.replace(LINE, '')).toBe('m constructor="c" toString=1\n');
  });
});

describe('turnBatchedLines', () => {
  it('writes the lines of one event-loop turn in one call, in order, at the turn end', async () => {
    const writes: string[] = [];
    const sink = turnBatchedLines((t) => void writes.push(t));
    sink.line('a\n');
    sink.line('b\n');
    expect(writes).toEqual([]);
    await new Promise((r) => setImmediate(r));
    expect(writes).toEqual(['a\nb\n']);
    sink.line('c\n');
    await new Promise((r) => setImmediate(r));
    expect(writes).toEqual(['a\nb\n', 'c\n']);
  });

  it('past maxChars pending, writes at once', () => {
    const writes: string[] = [];
    const sink = turnBatchedLines((t) => void writes.push(t), 10);
    sink.line('12345\n');
    expect(writes).toEqual([]);
    sink.line('67890\n');
    expect(writes).toEqual(['12345\n67890\n']);
    sink.flush();
    expect(writes).toHaveLength(1);
  });

  it.each([
    ['process.exit', 'process.exit(3)', 3],
    ['an uncaught exception', 'throw new Error("boom")', 1],
    ['the event loop running dry', '', 0],
  ])('writes what is pending when the process ends by %s', (_name, end, code) => {
    // the build of this file (`npm test` builds first)
    const sink = fileURLToPath(new URL('../../dist/core/log-sink.js', import.meta.url));
    const script = `import { turnBatchedLines } from ${JSON.stringify(sink)}; const s = turnBatchedLines((t) => process.stdout.write(t)); s.line('one\\n'); s.line('two\\n'); ${end}`;
    const r = spawnSync(process.execPath, ['--input-type=module', '-e', script], { encoding: 'utf8' });
    expect(r.status).toBe(code);
    expect(r.stdout).toBe('one\ntwo\n');
  });
});
