import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { worstCaseMicros } from './budget.js';
import { createGateway } from './gateway.js';
import { estimateBytes, IMAGE_TOKENS_BOUND, IMAGE_TOKENS_ESTIMATE, inlineImages } from './input-images.js';
import { MemoryGatewayStore } from './memory-store.js';
import { listen, type TestServer } from './test-server.js';
import { fakeUpstream } from './test-upstream.js';

const B64 = 'A'.repeat(120_000); // a ~90 KB screenshot's base64
const anthropicImage = { type: 'image', source: { type: 'base64', media_type: 'image/png', data: B64 } };

describe('inlineImages', () => {
  it('finds images in every wire format, nested in tool results too; URLs fetched by the provider are not counted', () => {
    const anthropic = { model: 'm', messages: [{ role: 'user', content: [{ type: 'tool_result', tool_use_id: 't', content: [anthropicImage, { type: 'text', text: 'x' }] }, anthropicImage] }] };
    expect(inlineImages(anthropic, 300_000)).toEqual({ images: 2, bytes: 240_000 });
    const dataUrl = `data:image/png;base64,${B64}`;
    const chat = { model: 'm', messages: [{ role: 'user', content: [{ type: 'image_url', image_url: { url: dataUrl } }, { type: 'image_url', image_url: { url: 'https://x/y.png' } }] }] };
    expect(inlineImages(chat, 200_000)).toEqual({ images: 1, bytes: dataUrl.length });
    const responses = { model: 'm', input: [{ role: 'user', content: [{ type: 'input_image', image_url: dataUrl }] }] };
    expect(inlineImages(responses, 200_000)).toEqual({ images: 1, bytes: dataUrl.length });
  });
  it('a body under 16 KiB is not searched', () => {
    expect(inlineImages({ messages: [{ content: [anthropicImage] }] }, 16 * 1024 - 1)).toEqual({ images: 0, bytes: 0 });
  });
  it('the worst case counts a bound per image instead of its base64', () => {
    const price = { input: 3, output: 15, cacheWrite5m: 3.75, cacheWrite1h: 6, cacheRead: 0.3 };
    // 300 bytes of text → 100 tokens, + 1 image at 6,000 tokens, × 6 µ$ (1 h cache write) + 100 × 15 µ$
    expect(worstCaseMicros(120_300, 100, price, { images: 1, bytes: 120_000 })).toBe((100 + IMAGE_TOKENS_BOUND) * 6 + 1_500);
    expect(estimateBytes(120_300, { images: 1, bytes: 120_000 })).toBe(300 + IMAGE_TOKENS_ESTIMATE * 4);
  });
});

describe('a call with a screenshot, through the gateway', () => {
  const TOKEN = 'flj_images_0123456789abcdefghijkl';
  const PRICES = { version: 't', models: {}, default: { input: 3, output: 15, cacheWrite5m: 3.75, cacheWrite1h: 6, cacheRead: 0.3 } };
  let usage: unknown = { input_tokens: 1_600, output_tokens: 10 };
  const reply = () => JSON.stringify({ id: 'msg_1', type: 'message', role: 'assistant', model: 'm', content: [], stop_reason: 'end_turn', ...(usage ? { usage } : {}) });
  let up: Awaited<ReturnType<typeof fakeUpstream>>;
  let gw: TestServer;
  const store = new MemoryGatewayStore();
  beforeAll(async () => {
    up = await fakeUpstream(() => ({ body: reply() }));
    store.addJob(TOKEN, { id: 31, rootId: 30, parentId: 30, budgetMicros: 0 });
    const app = createGateway({ store, config: { provider: 'anthropic', anthropicApiKey: 'sk-up', anthropicBaseUrl: up.url, prices: PRICES }, scriptFor: async () => null });
    gw = await listen(app.fetch);
  });
  afterAll(async () => {
    await gw.close();
    await up.close();
  });
  const body = JSON.stringify({ model: 'm', max_tokens: 100, messages: [{ role: 'user', content: [{ type: 'tool_result', tool_use_id: 't1', content: [anthropicImage] }] }] });
  const call = () => fetch(`${gw.url}/v1/messages`, { method: 'POST', headers: { 'content-type': 'application/json', 'x-api-key': TOKEN }, body });

  it('fits a $0.10 tree (by its bytes it reserved ~$0.24 and was refused), and is charged what the provider reports', async () => {
    // By bytes: ⌈120,1xx / 3⌉ ≈ 40,050 tokens × 6 µ$ ≈ 240,300 µ$ > 100,000.
    expect(Math.ceil(body.length / 3) * 6).toBeGreaterThan(100_000);
    store.budgets.set(30, { limit: 100_000, spent: 0, reserved: 0 });
    const res = await call();
    expect(res.status).toBe(200);
    expect(up.seen).toHaveLength(1);
    // 1,600 input × 3 µ$ + 10 output × 15 µ$
    expect(store.budgets.get(30)).toEqual({ limit: 100_000, spent: 4_950, reserved: 0 });
  });

  it('usage unknown: charged the estimate with 1,600 tokens for the image, not its 120,000 bytes / 4', async () => {
    usage = null;
    store.budgets.set(30, { limit: 100_000, spent: 0, reserved: 0 });
    const res = await call();
    expect(res.status).toBe(200);
    // input: ⌈(text bytes + 1,600 × 4) / 4⌉ tokens × 3 µ$; output: the reply's bytes / 4 × 15 µ$
    const textBytes = body.length - B64.length;
    expect(store.budgets.get(30)!.spent).toBe(Math.ceil((textBytes + 6_400) / 4) * 3 + Math.ceil(reply().length / 4) * 15);
  });
});
