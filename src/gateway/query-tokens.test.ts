import { describe, expect, it } from 'vitest';
import { withoutTokenParams } from './query-tokens.js';

const T = 'flj_AbpawstMwrIwsJNrDKNkJ64kqAflTkxZOSptI1uhgr4';

describe('withoutTokenParams', () => {
  it('drops the parameters holding a token, keeping the others byte for byte and in order', () => {
    expect(withoutTokenParams(`/v1/chat/completions?api-version=2024-01-01&key=${T}`)).toBe('/v1/chat/completions?api-version=2024-01-01');
    expect(withoutTokenParams(`/v1/messages?key=${T}&beta=true&x=a%20b`)).toBe('/v1/messages?beta=true&x=a%20b');
    expect(withoutTokenParams(`/v1/messages?key=${T}`)).toBe('/v1/messages');
    // percent-encoded, or as a parameter's name
    expect(withoutTokenParams(`/v1/messages?k=${encodeURIComponent(T).replace('_', '%5F')}&beta=true`)).toBe('/v1/messages?beta=true');
    expect(withoutTokenParams(`/v1/messages?${T}&beta=true`)).toBe('/v1/messages?beta=true');
  });
  it('leaves a query without a token exactly as sent', () => {
    for (const p of ['/v1/messages', '/v1/messages?beta=true', '/v1/messages?a=%ZZ&b=c', '/v1/responses?', '/v1/messages?q=flj_short']) expect(withoutTokenParams(p)).toBe(p);
  });
});
