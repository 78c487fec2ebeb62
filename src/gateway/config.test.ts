import { SettingError } from '../core/setting-env.js';
import { describe, expect, it } from 'vitest';
import { loadGatewayConfig } from './config.js';

describe('loadGatewayConfig', () => {
  it('is scripted without ANTHROPIC_API_KEY, upstream defaulting to api.anthropic.com', () => {
    const c = loadGatewayConfig({ ANTHROPIC_API_KEY: '  ' });
    expect(c.provider).toBe('scripted');
    expect(c.anthropicApiKey).toBeUndefined();
    expect(c.anthropicBaseUrl).toBe('https://api.anthropic.com');
    expect(c.prices.models['claude-sonnet-4-5']?.input).toBe(3);
  });
  it('is anthropic with a key; ANTHROPIC_BASE_URL overrides the upstream (trailing slash dropped)', () => {
    const c = loadGatewayConfig({ ANTHROPIC_API_KEY: 'sk-ant-xyz', ANTHROPIC_BASE_URL: 'http://127.0.0.1:9/' });
    expect(c).toMatchObject({ provider: 'anthropic', anthropicApiKey: 'sk-ant-xyz', anthropicBaseUrl: 'http://127.0.0.1:9' });
  });
  it('rejects a base URL that is not http(s), naming the variable', () => {
    expect(() => loadGatewayConfig({ ANTHROPIC_BASE_URL: 'ftp://x' })).toThrow(/ANTHROPIC_BASE_URL/);
    expect(() => loadGatewayConfig({ ANTHROPIC_BASE_URL: 'not a url' })).toThrow(/ANTHROPIC_BASE_URL/);
  });
});

describe('model → provider mapping', () => {
  it('parses FLOTILLA_MODEL_PROVIDERS; first matching rule wins; none → unknown (null); unset → the default', async () => {
    const { parseModelProviders, providerForModel, loadGatewayConfig } = await import('./config.js');
    const routes = parseModelProviders('claude-* = anthropic, gpt-5-codex=scripted, gpt-*=openai ,qwen2.5=openai-compatible');
    expect(routes).toEqual([
      { pattern: 'claude-*', provider: 'anthropic' },
      { pattern: 'gpt-5-codex', provider: 'scripted' },
      { pattern: 'gpt-*', provider: 'openai' },
      { pattern: 'qwen2.5', provider: 'openai-compatible' },
    ]);
    expect(providerForModel(routes, 'claude-sonnet-4-5', 'scripted')).toBe('anthropic');
    expect(providerForModel(routes, 'gpt-5-codex', 'scripted')).toBe('scripted');
    expect(providerForModel(routes, 'gpt-5-mini', 'scripted')).toBe('openai');
    expect(providerForModel(routes, 'qwen2.5', 'scripted')).toBe('openai-compatible');
    expect(providerForModel(routes, 'qwen2.5-coder', 'scripted')).toBeNull();
    expect(providerForModel(undefined, 'anything', 'scripted')).toBe('scripted');
    expect(() => parseModelProviders('gpt-*=azure')).toThrow(/FLOTILLA_MODEL_PROVIDERS: rule "gpt-\*=azure"/);
    expect(() => parseModelProviders('claude-*=anthropic,claude-*=openai')).toThrow('FLOTILLA_MODEL_PROVIDERS: the model pattern "claude-*" is given twice (the first rule wins, the second could never be used): give each once');
    expect(() => parseModelProviders(' , ,')).toThrow('FLOTILLA_MODEL_PROVIDERS: no rule in " , ,": give <model pattern>=<anthropic|scripted|openai|openai-compatible>,... or leave it unset');
    expect(() => parseModelProviders('**=anthropic')).toThrow('FLOTILLA_MODEL_PROVIDERS: rule "**=anthropic": the model pattern must not hold ** (a run of * matches what one * does: write one)');
    expect(() => parseModelProviders('claude\u00e9*=anthropic')).toThrow(/^FLOTILLA_MODEL_PROVIDERS: rule "claude\u00e9\*=anthropic": the model pattern must be 1-200 characters of letters, digits/);
    expect(loadGatewayConfig({ FLOTILLA_MODEL_PROVIDERS: '*=scripted' }).modelProviders).toEqual([{ pattern: '*', provider: 'scripted' }]);
    expect(() => loadGatewayConfig({ FLOTILLA_GATEWAY_RETRIES: 'many' })).toThrow(/FLOTILLA_GATEWAY_RETRIES/);
    // whole numbers as the CLI's number flags take them: no spaces around (they were trimmed away, fresh-tester finding)
    expect(loadGatewayConfig({ FLOTILLA_GATEWAY_RETRIES: '4', FLOTILLA_GATEWAY_BUDGET_WAIT_MS: '0', FLOTILLA_GATEWAY_RESERVATION_TTL_MS: '60000' })).toMatchObject({ retry: { retries: 4 }, budgetWaitMs: 0, reservationTtlMs: 60_000 });
    expect(() => loadGatewayConfig({ FLOTILLA_GATEWAY_RETRIES: ' 2' })).toThrow(new SettingError('FLOTILLA_GATEWAY_RETRIES must be a whole number from 0 to 10, got " 2"'));
    expect(() => loadGatewayConfig({ FLOTILLA_GATEWAY_RETRIES: '2 ' })).toThrow('FLOTILLA_GATEWAY_RETRIES must be a whole number from 0 to 10, got "2 "');
    expect(() => loadGatewayConfig({ FLOTILLA_GATEWAY_BUDGET_WAIT_MS: ' 20000' })).toThrow('FLOTILLA_GATEWAY_BUDGET_WAIT_MS must be milliseconds from 0 to 600000, got " 20000"');
    expect(() => loadGatewayConfig({ FLOTILLA_GATEWAY_RESERVATION_TTL_MS: '6e4' })).toThrow('FLOTILLA_GATEWAY_RESERVATION_TTL_MS must be milliseconds from 10000 to 86400000, got "6e4"');
    // how long a resumed job that has not started holds its budget room (server/budget-sweep.ts)
    expect(loadGatewayConfig({ FLOTILLA_GATEWAY_BUDGET_HOLD_MS: '60000' })).toMatchObject({ budgetHoldMs: 60_000 });
    expect(loadGatewayConfig({})).not.toHaveProperty('budgetHoldMs');
    expect(() => loadGatewayConfig({ FLOTILLA_GATEWAY_BUDGET_HOLD_MS: '9999' })).toThrow('FLOTILLA_GATEWAY_BUDGET_HOLD_MS must be milliseconds from 10000 to 604800000, got "9999"');
    expect(loadGatewayConfig({ OPENAI_API_KEY: 'k1, k2' }).openai).toEqual({ provider: 'openai', baseUrl: 'https://api.openai.com/v1', apiKeys: ['k1', 'k2'] });
    expect(loadGatewayConfig({ FLOTILLA_OPENAI_COMPATIBLE_URL: 'http://127.0.0.1:8080/v1/' }).openai).toEqual({ provider: 'openai-compatible', baseUrl: 'http://127.0.0.1:8080/v1', apiKeys: [] });
    expect(() => loadGatewayConfig({ FLOTILLA_OPENAI_COMPATIBLE_URL: 'ftp://x' })).toThrow(/FLOTILLA_OPENAI_COMPATIBLE_URL must be http/);
  });

  it('an upstream URL holding a user name or password, a query or a fragment is refused naming the key setting, and the message never repeats them (fresh-user finding: credentials were dropped without a word)', () => {
    const cases: Array<[Record<string, string>, string]> = [
      [{ FLOTILLA_OPENAI_COMPATIBLE_URL: 'http://user:s3cretpw@127.0.0.1:24711/v1' }, "FLOTILLA_OPENAI_COMPATIBLE_URL holds a user name or password (http://***@127.0.0.1:24711/v1): the gateway does not send them upstream; put the provider's key in FLOTILLA_OPENAI_COMPATIBLE_KEY and leave it out of the URL"],
      [{ OPENAI_API_KEY: 'k', OPENAI_BASE_URL: 'https://s3cretpw@gw.example/v1' }, "OPENAI_BASE_URL holds a user name or password (https://***@gw.example/v1): the gateway does not send them upstream; put the provider's key in OPENAI_API_KEY and leave it out of the URL"],
      [{ ANTHROPIC_BASE_URL: 'https://:s3cretpw@api.example' }, "ANTHROPIC_BASE_URL holds a user name or password (https://***@api.example/): the gateway does not send them upstream; put the provider's key in ANTHROPIC_API_KEY and leave it out of the URL"],
      // a query or fragment: the API's paths would go after it; not repeated (a key may sit there)
      [{ FLOTILLA_OPENAI_COMPATIBLE_URL: 'http://127.0.0.1:24711/v1?api_key=s3cretpw' }, 'FLOTILLA_OPENAI_COMPATIBLE_URL has a query (?...): a base URL takes the API\'s paths after it (http://127.0.0.1:24711/v1); leave it out, and put a key in FLOTILLA_OPENAI_COMPATIBLE_KEY'],
      [{ ANTHROPIC_BASE_URL: 'https://api.example/#s3cretpw' }, 'ANTHROPIC_BASE_URL has a fragment (#...): a base URL takes the API\'s paths after it (https://api.example/); leave it out'],
      // not a URL, or not http(s): named, with what stood before an @ masked
      [{ ANTHROPIC_BASE_URL: 'ftp://u:s3cretpw@files.example/' }, 'ANTHROPIC_BASE_URL must be http(s), got "ftp://***@files.example/"'],
      [{ FLOTILLA_OPENAI_COMPATIBLE_URL: 'http://u:s3cretpw@[bad/v1' }, 'FLOTILLA_OPENAI_COMPATIBLE_URL is not a URL: "http://***@[bad/v1"'],
      // no scheme: `new URL` reads `user:` as one (fresh-user finding: the password was echoed)
      [{ OPENAI_API_KEY: 'k', OPENAI_BASE_URL: 'user:s3cretpw@api.openai.com/v1' }, 'OPENAI_BASE_URL must be http(s), got "***@api.openai.com/v1"'],
      [{ FLOTILLA_OPENAI_COMPATIBLE_URL: 'example.com:s3cretpw@foo' }, 'FLOTILLA_OPENAI_COMPATIBLE_URL must be http(s), got "***@foo"'],
    ];
    for (const [env, message] of cases) {
      expect(() => loadGatewayConfig(env)).toThrow(message);
      expect(() => loadGatewayConfig(env)).not.toThrow(/s3cretpw/);
    }
    expect(loadGatewayConfig({ ANTHROPIC_BASE_URL: 'http://127.0.0.1:9/' }).anthropicBaseUrl).toBe('http://127.0.0.1:9');
  });

  it('a FLOTILLA_* setting set blank (a script\'s unset variable) is refused naming it, not read as unset; the providers\' own variables keep blank = unset', async () => {
    const { configFilePath } = await import('./config-file.js');
    for (const name of ['FLOTILLA_GATEWAY_RETRIES', 'FLOTILLA_GATEWAY_RESERVATION_TTL_MS', 'FLOTILLA_GATEWAY_BUDGET_WAIT_MS', 'FLOTILLA_GATEWAY_BUDGET_HOLD_MS', 'FLOTILLA_MODEL_PROVIDERS', 'FLOTILLA_PRICES_FILE', 'FLOTILLA_OPENAI_COMPATIBLE_URL']) {
      for (const blank of ['', '  ']) {
        expect(() => loadGatewayConfig({ [name]: blank }), name).toThrow(`${name} is set to "": give a value, or unset ${name}`);
      }
    }
    expect(() => configFilePath({ FLOTILLA_CONFIG: '' }, '/nonexistent')).toThrow('FLOTILLA_CONFIG is set to "": give a value, or unset FLOTILLA_CONFIG');
    expect(configFilePath({}, '/nonexistent')).toBeNull();
    expect(loadGatewayConfig({ ANTHROPIC_API_KEY: '', ANTHROPIC_BASE_URL: '', OPENAI_API_KEY: '' })).toMatchObject({ provider: 'scripted', anthropicBaseUrl: 'https://api.anthropic.com' });
  });
});
