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
