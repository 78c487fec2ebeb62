/**
 * The first line of `run --local` and `up` (model-line.ts) takes the gateway's model routes into
 * account: it said "offline scripted model (no ANTHROPIC_API_KEY set)" even when flotilla.yaml
 * sent models to another provider, and the run then failed naming the unconfigured provider.
 */
import { describe, expect, it } from 'vitest';
import { loadGatewayConfig, parseModelProviders } from '../../gateway/config.js';
import { describeModels, modelLine } from './stack.js';

/** The gateway configuration of `env`, with `routes` (FLOTILLA_MODEL_PROVIDERS syntax) as flotilla.yaml would add them. */
function config(env: NodeJS.ProcessEnv, routes: string) {
  return { ...loadGatewayConfig(env), modelProviders: parseModelProviders(routes) };
}

const ANTHROPIC_MISSING =
  'flotilla: warning: model route claude-* maps models to provider anthropic, which is not configured on this server: set ANTHROPIC_API_KEY (several keys: comma-separated), or route those models to another provider (flotilla.yaml gateway.models, FLOTILLA_MODEL_PROVIDERS)';

describe('modelLine with model routes', () => {
  it('claude-* → anthropic without ANTHROPIC_API_KEY: says the route goes to a provider not configured, and warns naming the setting', () => {
    const c = config({}, 'claude-*=anthropic,*=scripted');
    expect(modelLine(c)).toBe(
      'flotilla: model routes: claude-* → anthropic (not configured: its calls will fail); * (any other model) → the offline scripted model\n' + ANTHROPIC_MISSING,
    );
    expect(describeModels(c).offline).toBe(false);
  });

  it('claude-* → anthropic with a key: names Claude through the Anthropic API, no warning, the key never shows', () => {
    const line = modelLine(config({ ANTHROPIC_API_KEY: 'sk-ant-SECRET' }, 'claude-*=anthropic'));
    expect(line).toBe('flotilla: model routes: claude-* → Claude through the Anthropic API; any other model → refused as unknown (no default route)');
    expect(line).not.toContain('SECRET');
  });

  it('an ANTHROPIC_BASE_URL other than Anthropic\'s own is named, with and without routes (a proxy or a fake upstream)', () => {
    expect(modelLine(config({ ANTHROPIC_API_KEY: 'sk-ant-SECRET', ANTHROPIC_BASE_URL: 'http://127.0.0.1:19110/' }, 'claude-*=anthropic'))).toBe(
      'flotilla: model routes: claude-* → Claude through the Anthropic API at http://127.0.0.1:19110; any other model → refused as unknown (no default route)',
    );
    expect(describeModels(loadGatewayConfig({ ANTHROPIC_API_KEY: 'sk-ant-SECRET', ANTHROPIC_BASE_URL: 'http://127.0.0.1:19110' })).model).toBe('using Claude through the Anthropic API at http://127.0.0.1:19110');
    expect(describeModels(loadGatewayConfig({ ANTHROPIC_API_KEY: 'sk-ant-SECRET' })).model).toBe('using Claude through the Anthropic API');
  });

  it('* → openai-compatible with its URL: names the server (not its key; a URL with user info is refused at start, gateway/config.ts); without it: warns naming FLOTILLA_OPENAI_COMPATIBLE_URL', () => {
    const on = modelLine(config({ FLOTILLA_OPENAI_COMPATIBLE_URL: 'http://127.0.0.1:9/v1/', FLOTILLA_OPENAI_COMPATIBLE_KEY: 'k-SECRET' }, '*=openai-compatible'));
    expect(on).toBe('flotilla: model routes: * (any other model) → the OpenAI-compatible server at http://127.0.0.1:9/v1');
    expect(on).not.toMatch(/SECRET/);
    expect(modelLine(config({}, '*=openai-compatible'))).toBe(
      'flotilla: model routes: * (any other model) → openai-compatible (not configured: its calls will fail)\n' +
        'flotilla: warning: model route * maps models to provider openai-compatible, which is not configured on this server: set FLOTILLA_OPENAI_COMPATIBLE_URL (and FLOTILLA_OPENAI_COMPATIBLE_KEY if it needs a key), or route those models to another provider (flotilla.yaml gateway.models, FLOTILLA_MODEL_PROVIDERS)',
    );
  });

  it('gpt-* → openai: with OPENAI_API_KEY the OpenAI API, beside an openai-compatible server when both are set; the compatible server alone does not serve openai', () => {
    expect(modelLine(config({ OPENAI_API_KEY: 'sk-x' }, 'gpt-*=openai,*=scripted'))).toBe(
      'flotilla: model routes: gpt-* → the OpenAI API at https://api.openai.com/v1; * (any other model) → the offline scripted model',
    );
    // the compatible server alone does not serve openai routes: set OPENAI_API_KEY (both can be set)
    expect(modelLine(config({ FLOTILLA_OPENAI_COMPATIBLE_URL: 'http://127.0.0.1:9/v1' }, 'gpt-*=openai')).split('\n')[1]).toMatch(
      /^flotilla: warning: model route gpt-\* maps models to provider openai, which is not configured on this server: set OPENAI_API_KEY /,
    );
    expect(modelLine(config({ FLOTILLA_OPENAI_COMPATIBLE_URL: 'http://127.0.0.1:9/v1', OPENAI_API_KEY: 'sk-x' }, 'gpt-*=openai,qwen*=openai-compatible'))).toBe(
      'flotilla: model routes: gpt-* → the OpenAI API at https://api.openai.com/v1; qwen* → the OpenAI-compatible server at http://127.0.0.1:9/v1; any other model → refused as unknown (no default route)',
    );
    expect(modelLine(config({}, 'gpt-*=openai')).split('\n')[1]).toMatch(/^flotilla: warning: model route gpt-\* maps models to provider openai, which is not configured on this server: set OPENAI_API_KEY /);
  });

  it('every route to scripted: the offline scripted model, in the order the gateway tries them (default last)', () => {
    const c = config({}, '*=scripted,claude-*=scripted');
    expect(modelLine(c)).toBe('flotilla: offline scripted model (every model route goes to it: claude-*, * (any other model))');
    expect(describeModels(c)).toEqual({ model: 'offline scripted model (every model route goes to it: claude-*, * (any other model))', offline: true, warnings: [] });
  });

  it('a configured route an earlier one shadows is warned about (first match wins)', () => {
    const w = modelLine(config({}, 'claude-*=scripted,claude-sonnet-4-5=anthropic,claude-s*=openai,gpt-*=scripted,*=scripted')).split('\n').filter((l) => l.includes('never used'));
    expect(w).toEqual([
      'flotilla: warning: model route claude-sonnet-4-5 → anthropic is never used: the earlier route claude-* → scripted matches every model it does (configured routes are tried in order: put the more specific first)',
      'flotilla: warning: model route claude-s* → openai is never used: the earlier route claude-* → scripted matches every model it does (configured routes are tried in order: put the more specific first)',
    ]);
    // the more specific first: both are used
    expect(modelLine(config({}, 'claude-sonnet-4-5=scripted,claude-*=scripted,*=scripted'))).not.toContain('never used');
    expect(modelLine(config({}, 'a*c=scripted,a*=scripted'))).not.toContain('never used');
  });

  it('no routes, an OpenAI-format upstream: the line says where the OpenAI formats go', () => {
    expect(modelLine(loadGatewayConfig({ OPENAI_API_KEY: 'sk-x' }))).toBe('flotilla: offline scripted model (no ANTHROPIC_API_KEY set); the OpenAI formats: the OpenAI API at https://api.openai.com/v1');
    expect(modelLine(loadGatewayConfig({ OPENAI_API_KEY: 'sk-x', FLOTILLA_OPENAI_COMPATIBLE_URL: 'http://127.0.0.1:9/v1' }))).toBe(
      'flotilla: offline scripted model (no ANTHROPIC_API_KEY set); the OpenAI formats: the OpenAI-compatible server at http://127.0.0.1:9/v1 (the OpenAI API at https://api.openai.com/v1 only for models routed to openai)',
    );
  });

  it('no routes: the line as before', () => {
    expect(modelLine(loadGatewayConfig({}))).toBe('flotilla: offline scripted model (no ANTHROPIC_API_KEY set)');
    expect(modelLine(loadGatewayConfig({ ANTHROPIC_API_KEY: 'k' }))).toBe('flotilla: using Claude through the Anthropic API');
  });
});

describe('apiRoutesLine: the routes set through the API, which `up` prints after the configured ones', () => {
  it('in the order the gateway tries them (specific by literal characters, then *), each with where it sends models; none: null', async () => {
    const { apiRoutesLine } = await import('./stack.js');
    const c = loadGatewayConfig({ FLOTILLA_OPENAI_COMPATIBLE_URL: 'http://127.0.0.1:8080/v1' });
    expect(apiRoutesLine(c, [])).toBeNull();
    expect(
      apiRoutesLine(c, [
        { pattern: '*', provider: 'openai-compatible' },
        { pattern: 'gpt-*', provider: 'openai-compatible' },
        { pattern: 'gpt-4o', provider: 'openai' },
      ]),
    ).toBe(
      'flotilla: model routes set through the API (tried before the configured ones, but * after the configured patterns; flotilla models list shows all): gpt-4o → openai (not configured: its calls will fail); gpt-* → the OpenAI-compatible server at http://127.0.0.1:8080/v1; * (any other model) → the OpenAI-compatible server at http://127.0.0.1:8080/v1',
    );
    // the API's * comes after the configured patterns (model-directory.ts resolveProvider): "before the configured ones" said otherwise (fresh tester)
    expect(apiRoutesLine(c, [{ pattern: 'gpt-*', provider: 'openai-compatible' }])).toMatch(/^flotilla: model routes set through the API \(tried before the configured ones; /);
    expect(apiRoutesLine(c, [{ pattern: '*', provider: 'openai-compatible' }])).toMatch(/^flotilla: model routes set through the API \(\* tried after the configured patterns; /);
  });
});
