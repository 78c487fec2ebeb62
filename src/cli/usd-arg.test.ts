import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { InvalidArgumentError } from 'commander';
import { FlotillaClient } from '../client/index.js';
import { budgetArg, intIn, parseJobId, usdArg } from './options.js';
import { runCli } from './test-io.js';
import { startLocalUp, type LocalUp } from './test-up.js';

// USD amounts on the command line (options.ts usdArg): plain decimals, `.5` included, nothing else.

const price = usdArg('--input', { what: 'USD per million tokens (a number from 0 to 1000000)', min: 0, max: 1_000_000 });
const budget = budgetArg('--budget');

/** The error message `parse(text)` throws (an InvalidArgumentError), or a note that it did not throw. */
function refusal(parse: (t: string) => number, text: string): string {
  try {
    return `accepted: ${parse(text)}`;
  } catch (err) {
    expect(err).toBeInstanceOf(InvalidArgumentError);
    return (err as Error).message;
  }
}

describe('usdArg', () => {
  it('takes a leading-dot decimal: .5 is $0.50, .000001 one micro-dollar, .25 a quarter', () => {
    expect(budget('.5')).toBe(0.5);
    expect(budget('.25')).toBe(0.25);
    expect(budget('.000001')).toBe(0.000001);
    expect(price('.5')).toBe(0.5);
    expect(price('.0')).toBe(0);
    // the forms taken before still are
    expect([budget('5'), budget('0.5'), budget('12.25'), budget('100000'), budget('0.000001'), price('0'), price('1000000')]).toEqual([5, 0.5, 12.25, 100_000, 0.000001, 0, 1_000_000]);
  });

  it('refuses a sign (-.5, -1, +.5), a trailing dot, exponents, hex, spaces, commas, a lone dot, naming the flag and the value', () => {
    for (const bad of ['-.5', '-1', '+.5', '5.', '1e3', '.5e1', '0x10', ' 5', '5 ', ' .5', '5,00', ',5', '.', '..5', '.5.', '', 'Infinity']) {
      expect(refusal(budget, bad), JSON.stringify(bad)).toBe(
        `--budget must be a positive number of US dollars, a plain decimal such as 1 or 0.5 (or .5: digits and an optional fraction, no sign, exponent, hex, spaces, commas or trailing dot); got ${JSON.stringify(bad)}`,
      );
    }
  });

  it('refuses more than 6 decimals (finer than a micro-dollar); 6 are taken', () => {
    expect(refusal(price, '0.1234567')).toBe('--input must have at most 6 decimals (the smallest step is 0.000001); got "0.1234567"');
    expect(refusal(price, '.1234567')).toBe('--input must have at most 6 decimals (the smallest step is 0.000001); got ".1234567"');
    expect(refusal(budget, '1.0000001')).toBe('--budget must have at most 6 decimals (the smallest step is 0.000001); got "1.0000001"');
    expect(price('0.123456')).toBe(0.123456);
    // under the least is named as such before the decimals are
    expect(refusal(budget, '.0000001')).toBe('--budget must be a positive number of US dollars, at least 0.000001 dollars (one micro-dollar); got ".0000001"');
    expect(refusal(budget, '.0')).toBe('--budget must be a positive number of US dollars, at least 0.000001 dollars (one micro-dollar); got ".0"');
  });
});

describe('whole numbers refuse spaces around them as USD amounts do (intIn)', () => {
  it('a job id or whole-number option with a leading or trailing space, tab or newline is refused, naming it and the value', () => {
    for (const bad of [' 1', '1 ', '\t1', '1\n', ' ']) {
      expect(refusal(parseJobId, bad), JSON.stringify(bad)).toBe(`job id must be a whole number from 1 to 2147483647, without spaces around it; got ${JSON.stringify(bad)}`);
    }
    expect(refusal(intIn(-100, 100, 'priority'), ' -5')).toBe('priority must be a whole number from -100 to 100, without spaces around it; got " -5"');
    expect([parseJobId('1'), intIn(-100, 100, 'priority')('-5')]).toEqual([1, -5]);
    expect(refusal(parseJobId, '')).toBe('job id must be a whole number from 1 to 2147483647');
  });
});

// End to end: `flotilla run --budget .5` and `flotilla budget --add .5` against a real `flotilla up`.
let up: LocalUp;
let url: string;
let admin: FlotillaClient;
const run = (...args: string[]) => runCli([...args, '--server', url]);

beforeAll(async () => {
  up = await startLocalUp('flotilla-usd-arg-');
  url = up.url;
  admin = new FlotillaClient({ url, token: (await readFile(join(up.data, 'admin-token'), 'utf8')).trim() });
});

afterAll(async () => {
  expect(await up.stop()).toBe(0);
});

describe('USD flags end to end', () => {
  it('run --budget .5 gives the tree $0.50 (500,000 µ$); budget --add .5 adds $0.50; --add -.5 is refused (exit 2) and adds nothing', async () => {
    const started = await run('run', 'test-fixer', '{"repo":"examples/calc"}', '--budget', '.5', '--detach', '--json');
    expect(started.code, started.err).toBe(0);
    const id = (JSON.parse(started.out) as { job: { id: number } }).job.id;
    expect((await admin.getBudget(id)).budget.limitMicros).toBe(500_000);

    const add = await run('budget', String(id), '--add', '.5', '--json');
    expect(add.code, add.err).toBe(0);
    expect(JSON.parse(add.out)).toMatchObject({ budget: { limitMicros: 1_000_000 } });

    const neg = await run('budget', String(id), '--add', '-.5');
    expect([neg.code, neg.err]).toEqual([2, expect.stringContaining('--add must be a positive number of US dollars, a plain decimal such as 1 or 0.5')]);
    expect(neg.err).toContain('got "-.5"');
    expect((await admin.getBudget(id)).budget.limitMicros).toBe(1_000_000);

    // Spaces around either argument are refused alike (the job id ' N' was taken as N), from the command line or FLOTILLA_BUDGET_ADD
    const spacedJob = await run('budget', ` ${id}`, '--add', '1');
    expect([spacedJob.code, spacedJob.err]).toEqual([2, expect.stringContaining(`job id must be a whole number from 1 to 2147483647, without spaces around it; got " ${id}"`)]);
    for (const add of [' 1', '1 ']) {
      const spacedAdd = await run('budget', String(id), '--add', add);
      expect([spacedAdd.code, spacedAdd.err]).toEqual([2, expect.stringContaining(`--add must be a positive number of US dollars, a plain decimal`)]);
      process.env.FLOTILLA_BUDGET_ADD = add;
      const env = await run('budget', String(id));
      delete process.env.FLOTILLA_BUDGET_ADD;
      expect([env.code, env.err]).toEqual([2, expect.stringContaining(`value '${add}' from env 'FLOTILLA_BUDGET_ADD' is invalid. --add must be a positive number of US dollars`)]);
    }
    expect((await admin.getBudget(id)).budget.limitMicros).toBe(1_000_000);
    await admin.cancelJob(id);
  });
});
