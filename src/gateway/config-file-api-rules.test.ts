import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { SetModelPriceRequest, SetModelRouteRequest } from '../protocol/index.js';
import { loadGatewayFile } from './config-file.js';
import { loadPriceTable } from './prices.js';

// flotilla.yaml's `gateway:` section holds model names, patterns and rates to the API's rules
// (protocol/model-routes.ts PriceModelName, ModelPattern, UsdRate): a file the gateway starts
// with never holds a price `PUT /api/gateway/prices` would refuse, and the other way round.
// It took `input: 0.0000001` (finer than pricing can charge: core/pricing.ts rounds it to 0)
// and model names with spaces, both refused (or, for the rate, since made refused) by the API.

const dirs: string[] = [];
afterAll(() => dirs.forEach((d) => rmSync(d, { recursive: true, force: true })));

/** A flotilla.yaml holding `lines` under `gateway:`; its path. */
function yamlFile(lines: string[]): string {
  const dir = mkdtempSync(join(tmpdir(), 'flotilla-yaml-rules-'));
  dirs.push(dir);
  const file = join(dir, 'flotilla.yaml');
  writeFileSync(file, ['gateway:', ...lines.map((l) => `  ${l}`)].join('\n') + '\n');
  return file;
}

/** `value` as JSON with every number written as a plain decimal (JSON.stringify writes 1e-7, which flotilla.yaml refuses as not plain). */
function plainJson(value: object): string {
  return JSON.stringify(value, (_, v: unknown) => (typeof v === 'number' && /e/i.test(String(v)) ? `#${v.toFixed(20).replace(/0+$/, '')}#` : v)).replace(/"#([^#]*)#"/g, '$1');
}

/** One price in flotilla.yaml (YAML flow mapping = JSON, numbers plain decimals): the error message, or `ok`. */
function yamlPrice(model: string, price: object): string {
  const file = yamlFile(['prices:', `  ${JSON.stringify(model)}: ${plainJson(price)}`]);
  try {
    loadGatewayFile(file);
    return 'ok';
  } catch (err) {
    return (err as Error).message.replace(file, 'FILE');
  }
}

/** The same price as `PUT /api/gateway/prices` takes it: the first failing field and its message, or `ok`. */
function apiPrice(model: string, price: object): string {
  const r = SetModelPriceRequest.safeParse({ model, price });
  return r.success ? 'ok' : `${r.error.issues[0]?.path.join('.')}: ${r.error.issues[0]?.message}`;
}

const SIX = 'must have at most 6 decimals (the smallest step is 0.000001; a finer rate cannot be charged and would be rounded)';
const NAME = 'must be 1-200 characters of letters, digits, . _ : @ / + and - (a model name or name prefix: no *, spaces or other characters)';

describe('flotilla.yaml prices: the API\'s rules', () => {
  it('"default" is no model name to override (the table\'s default entry is not replaced by one): refused by both', () => {
    const msg = 'must not be "default": that is the price table\'s entry for the models it does not list, which an override does not replace (give the server a price table of your own with FLOTILLA_PRICES_FILE)';
    // the file's message names the model once: `the model name "default" is refused: that is ...`
    expect(yamlPrice('default', { input: 1, output: 2 })).toBe(`FILE:3: gateway.prices: the model name "default" is refused${msg.slice('must not be "default"'.length)}`);
    expect(apiPrice('default', { input: 1, output: 2 })).toBe(`model: ${msg}`);
    expect([yamlPrice('default-model', { input: 1, output: 2 }), apiPrice('defaults', { input: 1, output: 2 })]).toEqual(['ok', 'ok']);
  });

  it('a rate with more than 6 decimals is refused, naming the file, the model and the field (base, long-context, webSearch); the API refuses it too', () => {
    expect(yamlPrice('my-model', { input: 0.0000001, output: 2 })).toBe(`FILE:3: gateway.prices.my-model.input: ${SIX}`);
    expect(yamlPrice('my-model', { input: 1, output: 2.1234567 })).toBe(`FILE:3: gateway.prices.my-model.output: ${SIX}`);
    expect(yamlPrice('my-model', { input: 1, output: 2, cacheRead: 0.00000015 })).toBe(`FILE:3: gateway.prices.my-model.cacheRead: ${SIX}`);
    expect(yamlPrice('my-model', { input: 1, output: 2, webSearch: 10.0000001 })).toBe(`FILE:3: gateway.prices.my-model.webSearch: ${SIX}`);
    expect(yamlPrice('my-model', { input: 1, output: 2, longContext: { aboveInputTokens: 1000, input: 2, output: 4.0000001 } })).toBe(`FILE:3: gateway.prices.my-model.longContext.output: ${SIX}`);
    expect(apiPrice('my-model', { input: 0.0000001, output: 2 })).toBe(`price.input: ${SIX}`);
    expect(apiPrice('my-model', { input: 1, output: 2, longContext: { aboveInputTokens: 1000, input: 2, output: 4.0000001 } })).toBe(`price.longContext.output: ${SIX}`);
    // 6 decimals, and float noise of a 6-decimal rate, are taken by both
    for (const price of [{ input: 0.000001, output: 999_999.999999 }, { input: 0.1 + 0.2, output: 1.234567, webSearch: 0.000001 }]) {
      expect([yamlPrice('my-model', price), apiPrice('my-model', price)]).toEqual(['ok', 'ok']);
    }
  });

  it('a number not written as a plain decimal (hex, exponent, sign, .inf) is refused with its line and path, as the CLI refuses it (fresh-user finding: input: 0x10 priced $16)', () => {
    const written = (input: string) => {
      const file = yamlFile(['prices:', '  m1:', `    input: ${input}`, '    output: 1']);
      try {
        loadGatewayFile(file);
        return 'ok';
      } catch (err) {
        return (err as Error).message.replace(file, 'FILE');
      }
    };
    for (const bad of ['0x10', '1e1', '+3', '0o7', '.inf', '1_000']) {
      const got = written(bad);
      // YAML 1.2 reads `1_000` as text (the schema refuses it: a number is expected)
      if (bad === '1_000') expect(got).toMatch(/^FILE:4: gateway\.prices\.m1\.input: /);
      else expect(got).toBe(`FILE:4: gateway.prices.m1.input: ${bad} is not a plain decimal (digits and an optional fraction, such as 3 or 0.3: no sign, exponent or hex)`);
    }
    for (const good of ['3', '0.3', '.5', '12.250000']) expect(written(good), good).toBe('ok');
    // YAML 1.1 (a %YAML 1.1 directive) reads 010 as octal 8: refused, not priced at $8
    const dir = mkdtempSync(join(tmpdir(), 'flotilla-yaml-rules-'));
    dirs.push(dir);
    const v11 = join(dir, 'flotilla.yaml');
    writeFileSync(v11, '%YAML 1.1\n---\ngateway:\n  prices:\n    a-model:\n      input: 010\n      output: 3\n');
    expect(() => loadGatewayFile(v11)).toThrow(`${v11}:6: gateway.prices.a-model.input: 010 is read by YAML as 8: write it without leading zeros (or drop the %YAML 1.1 line)`);
    expect(written('017')).toBe('ok'); // YAML 1.2: 17
    const nested = yamlFile(['prices:', '  m2: { input: 1, output: 2, longContext: { aboveInputTokens: 2e5, input: 2, output: 4 } }']);
    expect(() => loadGatewayFile(nested)).toThrow(`${nested}:3: gateway.prices.m2.longContext.aboveInputTokens: 2e5 is not a plain decimal`);
  });

  it('a model name with a space, a * or other characters is refused, naming the file and the name; the API refuses the same names', () => {
    expect(yamlPrice('my model', { input: 1, output: 2 })).toBe(`FILE:3: gateway.prices: the model name "my model" ${NAME}`);
    expect(yamlPrice(' my-model', { input: 1, output: 2 })).toBe(`FILE:3: gateway.prices: the model name " my-model" ${NAME}`);
    expect(yamlPrice('my-*', { input: 1, output: 2 })).toBe(`FILE:3: gateway.prices: the model name "my-*" ${NAME}`);
    expect(yamlPrice('x'.repeat(201), { input: 1, output: 2 })).toMatch(/^FILE:3: gateway\.prices: the model name "x+" must be 1-200 characters/);
    for (const name of ['my model', ' my-model', 'my-*', 'é', 'x'.repeat(201)]) expect(apiPrice(name, { input: 1, output: 2 })).toBe(`model: ${NAME}`);
  });

  it('flotilla.yaml and the API agree on every case: one takes a price exactly when the other does', () => {
    const cases: Array<[string, object]> = [
      ['my-model', { input: 1, output: 2 }],
      ['vendor/model:v1@2025+x_y.z', { input: 3, output: 15, cacheWrite5m: 3.75, cacheWrite1h: 6, cacheRead: 0.3, webSearch: 10, maxOutput: 64_000 }],
      ['my-model', { input: 0.0000001, output: 2 }],
      ['my-model', { input: 1_000_000.000001, output: 2 }],
      ['my-model', { input: -0.000001, output: 2 }],
      ['my-model', { input: 800_000, output: 2 }], // default 1-hour cache writes: 1,600,000, past the cap
      ['my model', { input: 1, output: 2 }],
      ['tab\tmodel', { input: 1, output: 2 }],
      ['', { input: 1, output: 2 }],
    ];
    for (const [model, price] of cases) {
      const yaml = yamlPrice(model, price) === 'ok';
      expect([model, price, yaml], `${yamlPrice(model, price)} / ${apiPrice(model, price)}`).toEqual([model, price, apiPrice(model, price) === 'ok']);
    }
    // every name and rate of data/prices.json passes the API's rules too
    const table = loadPriceTable();
    for (const [model, price] of Object.entries(table.models)) expect([model, apiPrice(model, { ...price, longContext: price.longContext ?? null })]).toEqual([model, 'ok']);
  });
});

describe('flotilla.yaml routes: the API\'s rules', () => {
  it('a pattern with a space is refused naming the file and the pattern, as PUT /api/gateway/routes refuses it', () => {
    const file = yamlFile(['models:', '  "claude *": anthropic']);
    expect(() => loadGatewayFile(file)).toThrow(`${file}:3: gateway.models: the model pattern "claude *" must be 1-200 characters of letters, digits, . _ : @ / + - and * (a glob)`);
    expect(SetModelRouteRequest.safeParse({ pattern: 'claude *', provider: 'anthropic' }).success).toBe(false);
    expect(loadGatewayFile(yamlFile(['models:', '  "claude-*": anthropic'])).routes).toEqual([{ pattern: 'claude-*', provider: 'anthropic' }]);
  });
});

describe('flotilla.yaml keys and the limits a tester found apart', () => {
  /** flotilla.yaml with `section:` holding `key: value` written as is (YAML, not JSON): the error with FILE, or the names loaded. */
  function yamlKey(section: 'prices' | 'models', key: string): string {
    const value = section === 'prices' ? '{ input: 1, output: 2 }' : 'scripted';
    const file = yamlFile([`${section}:`, `  ${key}: ${value}`]);
    try {
      const c = loadGatewayFile(file);
      return section === 'prices' ? Object.keys(c.prices).join(',') : c.routes.map((r) => r.pattern).join(',');
    } catch (err) {
      return (err as Error).message.replace(file, 'FILE');
    }
  }

  it('a key YAML reads as a number, boolean or null is refused with its line, not taken as another name (the API takes "1e3" as written)', () => {
    // line 3: gateway:, section:, then the key
    expect(yamlKey('prices', '1e3')).toBe('FILE:3: gateway.prices: the model name 1e3 is read by YAML as the number 1000, not a name: quote it ("1e3")');
    expect(yamlKey('prices', '007')).toBe('FILE:3: gateway.prices: the model name 007 is read by YAML as the number 7, not a name: quote it ("007")');
    expect(yamlKey('models', 'true')).toBe('FILE:3: gateway.models: the model pattern true is read by YAML as the boolean true, not a name: quote it ("true")');
    expect(yamlKey('prices', '~')).toBe('FILE:3: gateway.prices: the model name ~ is read by YAML as null, not a name: quote it ("~")');
    // quoted: the name as written, as the API stores it
    expect(yamlKey('prices', '"1e3"')).toBe('1e3');
    expect(yamlKey('models', "'007'")).toBe('007');
    expect(apiPrice('1e3', { input: 1, output: 2 })).toBe('ok');
  });

  it('a __proto__ key (dropped by the record validation: the model went unpriced or unrouted without a word) is refused with its line; toString is a name like any other', () => {
    expect(yamlKey('prices', '__proto__')).toBe('FILE:3: gateway.prices: the model name "__proto__" cannot be read from a file (it would be dropped): price it with flotilla models price');
    expect(yamlKey('models', '"__proto__"')).toBe('FILE:3: gateway.models: the model pattern "__proto__" cannot be read from a file (it would be dropped): route it with flotilla models set');
    expect([yamlKey('prices', 'toString'), yamlKey('models', 'constructor')]).toEqual(['toString', 'constructor']);
  });

  it('a price name ending with "-" (it would only ever match itself) and a long-context threshold past 100,000,000 tokens are refused by both', () => {
    expect(yamlPrice('gz-', { input: 1, output: 2 })).toMatch(/^FILE:3: gateway\.prices: the model name "gz-" must not end with "-"/);
    expect(apiPrice('gz-', { input: 1, output: 2 })).toMatch(/^model: must not end with "-"/);
    const lc = (above: number) => ({ input: 1, output: 2, longContext: { aboveInputTokens: above, input: 2, output: 4 } });
    expect(yamlPrice('m', lc(100_000_001))).toMatch(/^FILE:3: gateway\.prices\.m\.longContext\.aboveInputTokens: /);
    expect(apiPrice('m', lc(100_000_001))).toMatch(/^price\.longContext\.aboveInputTokens: /);
    expect([yamlPrice('m', lc(100_000_000)), apiPrice('m', lc(100_000_000))]).toEqual(['ok', 'ok']);
  });
});

describe('a left-out cache rate whose default is past 1,000,000', () => {
  it('is named as a default, not as "too big", by the API and flotilla.yaml alike', () => {
    const msg = (times: string, v: number, key: string) => `left out, it defaults to input × ${times} = ${v}, past the most a rate may be (1000000): give ${key}`;
    // input 600,000: the 1-hour write (× 2 = 1,200,000) is past; × 1.25 = 750,000 is not
    expect(apiPrice('m', { input: 600_000, output: 1 })).toBe(`price.cacheWrite1h: ${msg('2', 1_200_000, 'cacheWrite1h')}`);
    expect(yamlPrice('m', { input: 600_000, output: 1 })).toBe(`FILE:3: gateway.prices.m.cacheWrite1h: ${msg('2', 1_200_000, 'cacheWrite1h')}`);
    // both writes past at 1,000,000; given, they are taken
    expect(apiPrice('m', { input: 1_000_000, output: 1 })).toBe(`price.cacheWrite5m: ${msg('1.25', 1_250_000, 'cacheWrite5m')}`);
    expect(apiPrice('m', { input: 1_000_000, output: 1, cacheWrite5m: 1, cacheWrite1h: 1 })).toBe('ok');
    expect(yamlPrice('m', { input: 1, output: 1, longContext: { aboveInputTokens: 10, input: 900_000, output: 1 } })).toBe(`FILE:3: gateway.prices.m.longContext.cacheWrite5m: ${msg('1.25', 1_125_000, 'cacheWrite5m')}`);
  });
});

describe('flotilla.yaml top level: only known sections', () => {
  /** A flotilla.yaml written as `text`: the error with FILE, or the routes loaded. */
  function load(text: string): string {
    const dir = mkdtempSync(join(tmpdir(), 'flotilla-yaml-top-'));
    dirs.push(dir);
    const file = join(dir, 'flotilla.yaml');
    writeFileSync(file, text);
    try {
      return `routes ${loadGatewayFile(file).routes.map((r) => `${r.pattern}=${r.provider}`).join(',')}`;
    } catch (err) {
      return (err as Error).message.replace(file, 'FILE');
    }
  }

  it('a misspelled section is refused with its line (fresh-user finding: `gatway:` started a server with no routes, sending local models to the default provider)', () => {
    expect(load('gatway:\n  models:\n    fake-*: openai-compatible\n')).toBe('FILE:1: unknown section "gatway" (flotilla.yaml has: gateway)');
    expect(load('# routes\ngateway:\n  models:\n    a: scripted\nrunner:\n  x: 1\n')).toBe('FILE:5: unknown section "runner" (flotilla.yaml has: gateway)');
    expect(load('1: x\n')).toBe('FILE:1: unknown section "1" (flotilla.yaml has: gateway)');
  });

  it('a problem inside gateway: names its line; several YAML documents and a gateway that is no mapping are named in the user\'s words (fresh-user findings)', () => {
    expect(load('gateway:\n  modles:\n    a: scripted\n')).toBe('FILE:2: gateway: Unrecognized key: "modles"');
    expect(load('# top\ngateway:\n  models:\n    a: scripted\n  prices:\n    m: { input: 1 }\n')).toMatch(/^FILE:6: gateway\.prices\.m\.output: /);
    expect(load('gateway:\n  models:\n    a: scripted\n---\ngateway:\n  models: {}\n')).toBe('FILE:4: holds more than one YAML document (a --- line): flotilla.yaml is one');
    expect(load('gateway: [1, 2]\n')).toBe('FILE:1: gateway: must be a mapping (models:, prices:)');
    expect(load('# x\ngateway: !!binary aGVsbG8=\n')).toBe('FILE:2: gateway: must be a mapping (models:, prices:)');
  });

  it('a key given twice in one mapping is refused with both lines, at any depth (our one-pass check: the YAML library\'s own was quadratic, 3 s for 20,000 routes); 20,000 routes load in file order', () => {
    expect(load('gateway:\n  models:\n    a-*: scripted\n    b: scripted\n    a-*: anthropic\n')).toBe('FILE:5: the key "a-*" is given twice in one mapping (first on line 3)');
    expect(load('gateway:\n  models: {}\ngateway:\n  models: {}\n')).toBe('FILE:3: the key "gateway" is given twice in one mapping (first on line 1)');
    expect(load('gateway:\n  prices:\n    m: { input: 1, output: 2, input: 3 }\n')).toBe('FILE:3: the key "input" is given twice in one mapping (first on line 3)');
    const many = ['gateway:', '  models:', ...Array.from({ length: 20_000 }, (_, i) => `    m${i}-*: scripted`)].join('\n');
    expect(load(many)).toMatch(/^routes m0-\*=scripted,m1-\*=scripted,.*,m19999-\*=scripted$/);
  });

  it('a top level that is a list or a scalar is refused; an empty file, a comment-only file or an empty section configure nothing', () => {
    expect(load('- gateway\n')).toBe('FILE: the top level must be a mapping of sections (gateway:), not a list');
    expect(load('gateway\n')).toBe('FILE: the top level must be a mapping of sections (gateway:), not the string "gateway"');
    expect([load(''), load('# nothing yet\n'), load('gateway:\n'), load('gateway:\n  models:\n    a: scripted\n')]).toEqual(['routes ', 'routes ', 'routes ', 'routes a=scripted']);
  });
});

describe('flotilla.yaml: left-out cache rates take the ratios of the table entry the price replaces, as the API does', () => {
  it('gpt-4o { input: 5, output: 20 } reads at 2.5 (the table reads gpt-4o at half its input rate); an unlisted model at × 0.1', () => {
    const file = yamlFile(['prices:', '  gpt-4o: { input: 5, output: 20 }', '  my-model: { input: 5, output: 20 }']);
    const loaded = loadGatewayFile(file, loadPriceTable());
    expect(loaded.prices['gpt-4o']).toEqual({ input: 5, output: 20, cacheWrite5m: 5, cacheWrite1h: 5, cacheRead: 2.5 });
    // the table's default entry: 18.75 / 15 = 1.25, 30 / 15 = 2, 1.5 / 15 = 0.1
    expect(loaded.prices['my-model']).toEqual({ input: 5, output: 20, cacheWrite5m: 6.25, cacheWrite1h: 10, cacheRead: 0.5 });
  });
});
