/**
 * A provider key setting with no key in it (only commas and blanks) counts as unset, for every
 * provider: `ANTHROPIC_API_KEY=',,'` leaves the offline scripted model (it used to select the
 * Anthropic API, whose every call then failed 500 provider_not_configured), like OPENAI_API_KEY.
 */
import { describe, expect, it } from 'vitest';
import { keySetting, loadGatewayConfig } from '../../gateway/config.js';
import { modelLine } from './stack.js';

describe('provider key settings', () => {
  it('keySetting: keys trimmed, empty entries dropped; none → undefined', () => {
    expect(keySetting(undefined)).toBeUndefined();
    expect(keySetting(',,')).toBeUndefined();
    expect(keySetting(' , ')).toBeUndefined();
    expect(keySetting(' a , ,b,')).toBe('a,b');
  });

  it.each([',,', ' , ', ' ,, , '])('ANTHROPIC_API_KEY=%j is unset: scripted model, and the start line says so', (v) => {
    const c = loadGatewayConfig({ ANTHROPIC_API_KEY: v });
    expect(c.provider).toBe('scripted');
    expect(c.anthropicApiKey).toBeUndefined();
    expect(modelLine(c)).toBe('flotilla: offline scripted model (no ANTHROPIC_API_KEY set)');
  });

  it('ANTHROPIC_API_KEY with keys among empty entries: anthropic, with just those keys', () => {
    const c = loadGatewayConfig({ ANTHROPIC_API_KEY: ' , sk-ant-a ,, sk-ant-b , ' });
    expect(c).toMatchObject({ provider: 'anthropic', anthropicApiKey: 'sk-ant-a,sk-ant-b' });
    expect(modelLine(c)).toBe('flotilla: using Claude through the Anthropic API');
  });

  it('OPENAI_API_KEY and FLOTILLA_OPENAI_COMPATIBLE_KEY of only commas hold no key', () => {
    expect(loadGatewayConfig({ OPENAI_API_KEY: ' , ' }).openai).toBeUndefined();
    expect(loadGatewayConfig({ FLOTILLA_OPENAI_COMPATIBLE_URL: 'http://127.0.0.1:9/v1', FLOTILLA_OPENAI_COMPATIBLE_KEY: ',, ' }).openai).toEqual({ provider: 'openai-compatible', baseUrl: 'http://127.0.0.1:9/v1', apiKeys: [] });
    expect(loadGatewayConfig({ OPENAI_API_KEY: ',k1, k2 ,' }).openai?.apiKeys).toEqual(['k1', 'k2']);
  });
});
