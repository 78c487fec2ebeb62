import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { PriceModelName } from '../protocol/index.js';
import { withOverrides } from './model-directory.js';
import { loadPriceTable, priceFor, type PriceTable } from './prices.js';

describe('price table', () => {
  const table = loadPriceTable();

  it('ships current Claude prices (USD per million tokens)', () => {
    expect(table.models['claude-sonnet-4-5']).toEqual({
      input: 3,
      output: 15,
      cacheWrite5m: 3.75,
      cacheWrite1h: 6,
      cacheRead: 0.3,
      webSearch: 10,
      maxOutput: 64_000,
      // Anthropic's long-context rates past 200,000 input tokens
      longContext: { aboveInputTokens: 200_000, input: 6, output: 22.5, cacheWrite5m: 7.5, cacheWrite1h: 12, cacheRead: 0.6 },
    });
    expect(table.models['claude-opus-4-1']).toEqual({ input: 15, output: 75, cacheWrite5m: 18.75, cacheWrite1h: 30, cacheRead: 1.5, webSearch: 10, maxOutput: 32_000 });
    expect(table.models['claude-haiku-4-5']).toEqual({ input: 1, output: 5, cacheWrite5m: 1.25, cacheWrite1h: 2, cacheRead: 0.1, webSearch: 10, maxOutput: 64_000 });
    expect(table.version).toMatch(/^\d{4}-\d{2}-\d{2}$/);
  });

  it('a price table file with a model named __proto__ is refused naming it (the record validation would drop it without a word)', () => {
    const dir = mkdtempSync(join(tmpdir(), 'flotilla-prices-proto-'));
    const file = join(dir, 'prices.json');
    const entry = '{"input":1,"output":2,"cacheWrite5m":1.25,"cacheWrite1h":2,"cacheRead":0.1}';
    writeFileSync(file, `{"version":"t","models":{"__proto__":${entry},"constructor":${entry}},"default":${entry}}`);
    expect(() => loadPriceTable(file)).toThrow(`price table ${file}: field models.__proto__: a model of that name cannot be read from a file (it would be dropped): price it with flotilla models price`);
    writeFileSync(file, `{"version":"t","models":{"constructor":${entry}},"default":${entry}}`);
    expect(priceFor(loadPriceTable(file), 'constructor')).toMatchObject({ input: 1, output: 2 });
  });

  it('a price table file that gives a model twice, a field the table has not, or a name the API refuses is refused naming it', () => {
    const dir = mkdtempSync(join(tmpdir(), 'flotilla-prices-strict-'));
    const file = join(dir, 'prices.json');
    const entry = '{"input":1,"output":2,"cacheWrite5m":1.25,"cacheWrite1h":2,"cacheRead":0.1}';
    writeFileSync(file, `{"version":"t","models":{"m":${entry},"m":{"input":9,"output":9,"cacheWrite5m":9,"cacheWrite1h":9,"cacheRead":9}},"default":${entry}}`);
    expect(() => loadPriceTable(file)).toThrow(`price table ${file}: field models.m: given twice; give each once`);
    writeFileSync(file, `{"version":"t","models":{"m":{"input":1,"output":2,"cacheWrite5m":1.25,"cacheWrite1h":2,"cacheRead":0.1,"maxOuput":5}},"default":${entry}}`);
    expect(() => loadPriceTable(file)).toThrow(`price table ${file}: field models.m: Unrecognized key: "maxOuput"`);
    writeFileSync(file, `{"version":"t","foo":1,"models":{},"default":${entry}}`);
    expect(() => loadPriceTable(file)).toThrow(`price table ${file}: field (root): Unrecognized key: "foo"`);
    writeFileSync(file, `{"version":"t","models":{"bad name*":${entry}},"default":${entry}}`);
    expect(() => loadPriceTable(file)).toThrow(/^price table .*: field models\.bad name\*: must be 1-200 characters of letters, digits/);
    writeFileSync(file, `{"version":"t","models":{"default":${entry}},"default":${entry}}`);
    expect(() => loadPriceTable(file)).toThrow(`price table ${file}: field models.default: "default" is not a model name: the entry for the models the table does not list is the top-level "default", beside "models"`);
    // the shipped table's own top-level words are kept
    writeFileSync(file, `{"version":"t","unit":"USD per million tokens","note":"n","models":{"m":${entry}},"default":${entry}}`);
    expect(loadPriceTable(file).models.m).toEqual({ input: 1, output: 2, cacheWrite5m: 1.25, cacheWrite1h: 2, cacheRead: 0.1 });
  });

  const small: PriceTable = {
    version: 't',
    models: {
      'm-a': { input: 1, output: 1, cacheWrite5m: 1, cacheWrite1h: 1, cacheRead: 1 },
      'm-a-b': { input: 2, output: 2, cacheWrite5m: 2, cacheWrite1h: 2, cacheRead: 2 },
      'm-ab': { input: 4, output: 4, cacheWrite5m: 4, cacheWrite1h: 4, cacheRead: 4 },
    },
    default: { input: 9, output: 9, cacheWrite5m: 9, cacheWrite1h: 9, cacheRead: 9 },
  };
  it.each([
    ['m-a', 1],
    ['m-a-b', 2],
    ['m-a-b-20250929', 2], // date suffix stripped
    ['m-a@20250929', 1],
    ['m-a-latest', 1],
    ['m-a:latest', 1], // Ollama's default tag: the name without a tag
    ['m-a:8b', 9], // any other tag may be another size: a name of its own (fresh tester)
    ['m-a-b-2025-09-29', 2], // OpenAI's date form stripped too
    ['m-a-b-chat', 2], // longest prefix at a dash boundary, the words after it never a dearer model
    ['m-a-b-codex-mini', 2],
    ['m-a-v2@20241022', 1],
    ['m-a-b-c', 9], // any other word may name a dearer model: the default
    ['m-a-x', 9],
    ['m-abc', 9], // "m-ab" is not a prefix at a dash boundary
    ['other', 9],
  ])('%s → input price %d', (model, input) => {
    expect(priceFor(small, model).input).toBe(input);
  });

  it('a premium variant is not priced as its base model; listed ones at their own list price', () => {
    expect(priceFor(small, 'm-a-pro')).toEqual(small.default);
    expect(priceFor(small, 'm-a-b-max-2')).toEqual(small.default);
    expect(priceFor(small, 'm-a-mini')).toEqual(small.models['m-a']); // not a premium word: the base's price
    // OpenAI list prices (USD per million tokens): gpt-5-pro $15 / $120, o3-pro $20 / $80
    expect([priceFor(table, 'gpt-5-pro').input, priceFor(table, 'gpt-5-pro').output]).toEqual([15, 120]);
    expect([priceFor(table, 'gpt-5-pro-2025-10-06').input, priceFor(table, 'gpt-5-pro-2025-10-06').output]).toEqual([15, 120]);
    expect([priceFor(table, 'o3-pro').input, priceFor(table, 'o3-pro').output]).toEqual([20, 80]);
    expect(priceFor(table, 'gpt-5-codex-pro')).toEqual(table.default);
  });

  it('a variant named after a listed model is not priced as it unless every word after the name is one that never names a dearer model', () => {
    // fresh-tester finding: these were charged at o3's, o4-mini's and gpt-4o's rates, 2-5x below
    // their own (OpenAI list prices, USD per million input / output tokens)
    expect([priceFor(table, 'o3-deep-research').input, priceFor(table, 'o3-deep-research').output]).toEqual([10, 40]);
    expect([priceFor(table, 'o4-mini-deep-research').input, priceFor(table, 'o4-mini-deep-research').output]).toEqual([2, 8]);
    expect([priceFor(table, 'gpt-4o-2024-05-13').input, priceFor(table, 'gpt-4o-2024-05-13').output]).toEqual([5, 15]);
    // the whole kind: unlisted variants with other words get the default ($15 / $75), never a cheaper model's rates
    for (const name of ['gpt-5-12345678', 'gpt-5.1-2025-13-45', 'gpt-4o-realtime-preview', 'gpt-4o-audio-preview', 'gpt-4o-mini-transcribe', 'gpt-5-thinking', 'claude-sonnet-4-5-fast']) {
      expect(priceFor(table, name), name).toEqual(table.default);
    }
    // ...or their model's rate where that is dearer: o3-deep-research reads cached input at $2.50, the default at $1.50
    expect(priceFor(table, 'o3-deep-research-2025-06-26x')).toEqual({ ...table.default, cacheRead: 2.5 });
    expect(priceFor(table, 'o1-preview')).toEqual({ ...table.default, cacheRead: 7.5 });
    // dated snapshots and same-price variants keep their model's price
    expect(priceFor(table, 'o3-deep-research-2025-06-26').input).toBe(10);
    expect(priceFor(table, 'gpt-4o-2024-08-06').input).toBe(2.5);
    expect(priceFor(table, 'gpt-4o-mini-2024-07-18').input).toBe(0.15);
    expect(priceFor(table, 'gpt-5.1-chat-latest')).toEqual(priceFor(table, 'gpt-5.1'));
    expect(priceFor(table, 'gpt-5.1-codex')).toEqual(priceFor(table, 'gpt-5.1'));
  });

  it('a variant of a model dearer than the default is charged at least that model\'s rates; a name in other case is the listed one (fresh tester)', () => {
    // listed (USD per million): o1-pro 150 / 600, gpt-5.4-pro 30 / 180 (60 / 270 above 272,000 input tokens), gpt-5-pro 15 / 120; default 15 / 75
    expect(priceFor(table, 'GPT-5-PRO')).toEqual(priceFor(table, 'gpt-5-pro'));
    expect(priceFor(table, 'Claude-Sonnet-4-5-20250929')).toEqual(priceFor(table, 'claude-sonnet-4-5'));
    const o1 = priceFor(table, 'o1-pro:8b');
    expect([o1.input, o1.output, o1.cacheWrite5m, o1.cacheWrite1h, o1.cacheRead, o1.webSearch]).toEqual([150, 600, 150, 150, 150, 25]);
    const max = priceFor(table, 'gpt-5.4-pro-max');
    expect([max.input, max.output, max.cacheWrite5m, max.cacheWrite1h, max.cacheRead]).toEqual([30, 180, 30, 30, 30]);
    expect(max.longContext).toEqual({ aboveInputTokens: 272_000, input: 60, output: 270, cacheWrite5m: 60, cacheWrite1h: 60, cacheRead: 60 });
    expect(max.maxOutput).toBeUndefined();
    const gpt5pro = priceFor(table, 'gpt-5-pro-max');
    expect([gpt5pro.input, gpt5pro.output, gpt5pro.cacheWrite5m, gpt5pro.cacheWrite1h, gpt5pro.cacheRead]).toEqual([15, 120, 18.75, 30, 15]);
    // a tag of a model cheaper than the default is the default, as any unlisted name
    expect(priceFor(table, 'claude-haiku-4-5:fast')).toEqual(table.default);
  });

  it('finds dated real model names', () => {
    expect(priceFor(table, 'claude-sonnet-4-5-20250929').output).toBe(15);
    expect(priceFor(table, 'claude-opus-4-1-20250805').output).toBe(75);
    expect(priceFor(table, 'claude-haiku-4-5-20251001').input).toBe(1);
  });

  it('names the file and field of a bad table', () => {
    const dir = mkdtempSync(join(tmpdir(), 'prices-'));
    const f = join(dir, 'p.json');
    writeFileSync(f, JSON.stringify({ version: 'x', models: { m: { input: 1 } }, default: small.default }));
    expect(() => loadPriceTable(f)).toThrow(/p\.json: field models\.m\.output/);
    writeFileSync(f, '{nope');
    expect(() => loadPriceTable(f)).toThrow(/p\.json/);
  });

  it('names a bad maxOutput or longContext field (a whole positive threshold, every rate given)', () => {
    const dir = mkdtempSync(join(tmpdir(), 'prices-'));
    const f = join(dir, 'p.json');
    const base = small.default;
    const long = { aboveInputTokens: 200_000, input: 6, output: 22.5, cacheWrite5m: 7.5, cacheWrite1h: 12, cacheRead: 0.6 };
    writeFileSync(f, JSON.stringify({ version: 'x', models: { m: { ...base, maxOutput: 0 } }, default: base }));
    expect(() => loadPriceTable(f)).toThrow(/field models\.m\.maxOutput/);
    writeFileSync(f, JSON.stringify({ version: 'x', models: { m: { ...base, longContext: { ...long, output: undefined } } }, default: base }));
    expect(() => loadPriceTable(f)).toThrow(/field models\.m\.longContext\.output/);
    writeFileSync(f, JSON.stringify({ version: 'x', models: { m: { ...base, longContext: { ...long, aboveInputTokens: 2.5 } } }, default: base }));
    expect(() => loadPriceTable(f)).toThrow(/field models\.m\.longContext\.aboveInputTokens/);
    writeFileSync(f, JSON.stringify({ version: 'x', models: { m: { ...base, maxOutput: 8_192, longContext: long } }, default: base }));
    expect(loadPriceTable(f).models.m).toEqual({ ...base, maxOutput: 8_192, longContext: long });
  });
});

describe('the names a price also covers, as the refusal of a name ending in "-" lists them', () => {
  it('every name the message says "gz" prices gets gz\'s price; the one it says needs its own gets the default', () => {
    const r = PriceModelName.safeParse('gz-');
    expect(r.success).toBe(false);
    const message = r.error!.issues[0]!.message;
    const [covered, other] = message.split('; any other name');
    const names = [...covered!.matchAll(/"(gz-[^"]+)"/g)].map((m) => m[1]!);
    expect(names).toEqual(['gz-20250101', 'gz-latest', 'gz-mini', 'gz-nano', 'gz-chat', 'gz-codex', 'gz-v2']);
    const gz = { input: 0.01, output: 0.02, cacheWrite5m: 0.0125, cacheWrite1h: 0.02, cacheRead: 0.001 };
    const table = withOverrides(loadPriceTable(), [{ model: 'gz', price: gz, updatedAt: 0 }] as never);
    for (const n of names) expect({ n, input: priceFor(table, n).input }).toEqual({ n, input: 0.01 });
    expect(other).toMatch(/"gz-pro"/);
    expect(priceFor(table, 'gz-pro').input).toBe(table.default.input);
  });

  it('the advice names the name given, without its "-" (fresh tester: it said "gz" of "gpt-4o-")', () => {
    const r = PriceModelName.safeParse('gpt-4o-');
    expect(r.error!.issues[0]!.message).toContain('give the model\'s own name ("gpt-4o" also prices "gpt-4o-20250101", "gpt-4o-latest", "gpt-4o-mini"');
    expect(r.error!.issues[0]!.message).toContain('such as "gpt-4o-pro", needs a price of its own');
  });
});
