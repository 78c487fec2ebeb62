import { useState, type FormEvent } from 'react';
import { ApiError, client, errorText, useApi, type PriceInEffect, type ProviderName } from '../api.js';
import { PLAIN_DECIMAL } from '../../../src/protocol/usd.js';
import { when } from '../format.js';

const PROVIDERS: ProviderName[] = ['anthropic', 'openai', 'openai-compatible', 'scripted'];
/** The per-token rates the form sets (USD per million tokens). */
type TokenRate = 'input' | 'output' | 'cacheWrite5m' | 'cacheWrite1h' | 'cacheRead';
const PRICE_FIELDS: Array<[TokenRate, string]> = [
  ['input', 'input'],
  ['output', 'output'],
  ['cacheWrite5m', 'cache write 5m'],
  ['cacheWrite1h', 'cache write 1h'],
  ['cacheRead', 'cache read'],
];

/** The fields a price in effect kept from the entry it replaced, in words. */
const KEPT_WORDS: Record<PriceInEffect['kept'][number], string> = { webSearch: 'web search', maxOutput: 'max output', longContext: 'long-context rates' };

/** `table 2026-12-02 default`, `flotilla.yaml qwen3`: the entry a price in effect replaced (the CLI says it alike). */
function replacedLabel(r: PriceInEffect['replaces'], tableVersion: string): string {
  return r.source === 'table' ? `table ${tableVersion} ${r.model ?? 'default'}` : `${r.source} ${r.model ?? ''}`.trim();
}

/**
 * Model providers and prices (GET/PUT/DELETE /api/gateway/routes and /api/gateway/prices):
 * which provider serves which model names (API routes can be changed here; configured ones are
 * read-only) and every price in effect other than the table's, USD per million tokens, with
 * where it came from (flotilla.yaml, read-only here, or the API, removable) and the entry it
 * replaced, as `flotilla models` lists them. A route whose provider the server has no key or URL
 * for shows its warning. Members read; admins also set and remove (the server checks again). A
 * price needs input and output: cache rates left empty are set by the API, from the input rate
 * and the ratios of the table entry the override replaces (gpt-4o reads at input × 0.5; × 1.25,
 * × 2, × 0.1 for a model the table does not list), as in the CLI.
 */
export function ModelProviders({ isAdmin }: { isAdmin: boolean }) {
  const view = useApi(() => client.listModelRoutes(), []);
  const [pattern, setPattern] = useState('');
  const [provider, setProvider] = useState<ProviderName>('anthropic');
  const [model, setModel] = useState('');
  const [price, setPrice] = useState<Record<TokenRate, string>>({ input: '', output: '', cacheWrite5m: '', cacheWrite1h: '', cacheRead: '' });
  const [webSearch, setWebSearch] = useState('');
  const [maxOutput, setMaxOutput] = useState('');
  const [flatLong, setFlatLong] = useState(false);
  const [error, setError] = useState('');
  const act = async (f: () => Promise<unknown>) => {
    setError('');
    try {
      await f();
      view.reload();
      return true;
    } catch (e) {
      // this form has no long-context rate fields: its own way through (second fresh tester)
      if (e instanceof ApiError && e.field === 'price.longContext') {
        setError(`${e.message} — here: tick “long calls at these rates” to price every call at the rates above, or set long-context rates with flotilla models price --long-context-above … (price.longContext)`);
      } else setError(errorText(e));
      return false;
    }
  };
  const addRoute = async (e: FormEvent) => {
    e.preventDefault();
    if (await act(() => client.setModelRoute(pattern.trim(), provider))) setPattern('');
  };
  const addPrice = async (e: FormEvent) => {
    e.preventDefault();
    // input and output are needed; an empty cache rate is left to the API's default
    // a plain decimal, as the CLI and flotilla.yaml take a rate: `1e2` was saved as 100 (fresh tester)
    const bad = PRICE_FIELDS.find(([k]) => (price[k].trim() !== '' || k === 'input' || k === 'output') && !PLAIN_DECIMAL.test(price[k].trim()));
    if (bad) {
      setError(`price ${bad[1]}: enter USD per million tokens, a plain decimal such as 3 or 0.25 (no sign or exponent)${bad[0] === 'input' || bad[0] === 'output' ? '' : ', or leave it empty for the default'}`);
      return;
    }
    if (webSearch.trim() !== '' && !PLAIN_DECIMAL.test(webSearch.trim())) {
      setError('price web search: enter USD per 1,000 searches, a plain decimal such as 10 (no sign or exponent), or leave it empty');
      return;
    }
    if (maxOutput.trim() !== '' && !/^[1-9][0-9]*$/.test(maxOutput.trim())) {
      setError('price max output: enter a whole number of tokens, or leave it empty');
      return;
    }
    const p: Parameters<typeof client.setModelPrice>[1] = { input: Number(price.input), output: Number(price.output) };
    for (const [k] of PRICE_FIELDS) if (price[k].trim() !== '') p[k] = Number(price[k].trim());
    if (webSearch.trim() !== '') p.webSearch = Number(webSearch);
    if (maxOutput.trim() !== '') p.maxOutput = Number(maxOutput);
    // A model with long-context rates in the price table (Claude Sonnet 4 / 4.5) takes an override
    // only with its own long-context rates or none at all (the API's 400 names price.longContext).
    if (flatLong) p.longContext = null;
    if (await act(() => client.setModelPrice(model.trim(), p))) setModel('');
  };
  const v = view.data;
  return (
    <div className="card" data-testid="model-providers">
      <h3>Model providers and prices</h3>
      {view.error && <p className="error">{view.error.message}</p>}
      {!v && !view.error && <p className="empty">Loading…</p>}
      {v && (
        <>
          <p className="muted">
            Routes in the order tried{v.configured ? '' : ' (none set: each model goes to its wire format’s own provider)'}. Price table {v.priceTableVersion}.
          </p>
          <table data-testid="routes">
            <tbody>
              {v.routes.map((r) => (
                <tr key={`${r.source}:${r.pattern}`}>
                  <td>
                    <code>{r.pattern}</code>
                  </td>
                  <td>{r.provider}</td>
                  <td className="muted">{r.source === 'api' ? `set ${when(r.updatedAt)}` : 'configured'}</td>
                  <td className="error wrap" data-testid="route-warning">
                    {r.warning ?? ''}
                  </td>
                  <td>
                    {isAdmin && r.source === 'api' && (
                      <button className="link" onClick={() => act(() => client.deleteModelRoute(r.pattern))}>
                        Remove
                      </button>
                    )}
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
          {isAdmin && (
          <form className="inline" onSubmit={addRoute} onInvalidCapture={() => setError('')}>
            <input placeholder="model or glob, e.g. gpt-*" value={pattern} onChange={(e) => setPattern(e.target.value)} required aria-label="route pattern" />
            <select value={provider} onChange={(e) => setProvider(e.target.value as ProviderName)} aria-label="provider">
              {PROVIDERS.map((p) => (
                <option key={p}>{p}</option>
              ))}
            </select>
            <button type="submit" data-testid="add-route">
              Set route
            </button>
          </form>
          )}
          <h3 style={{ marginTop: '0.75rem' }}>Prices in effect other than the table’s (USD per million tokens)</h3>
          <table data-testid="prices">
            <tbody>
              {v.pricesInEffect.map((p) => (
                <tr key={p.model} data-source={p.source}>
                  <td>
                    <code>{p.model}</code>
                  </td>
                  <td className="num wrap">
                    in {p.price.input} · out {p.price.output} · cache w {p.price.cacheWrite5m}/{p.price.cacheWrite1h} · cache r {p.price.cacheRead}
                    {p.price.webSearch !== undefined && ` · web search ${p.price.webSearch}/1k`}
                    {p.price.maxOutput !== undefined && ` · max output ${p.price.maxOutput}`}
                    {p.price.longContext === null && ' · long context flat'}
                    {p.price.longContext && ` · above ${p.price.longContext.aboveInputTokens} input: in ${p.price.longContext.input} · out ${p.price.longContext.output}`}
                  </td>
                  <td className="muted wrap" data-testid="price-source">
                    {p.source === 'api' ? `set ${when(p.updatedAt)}` : p.source}
                    {` · replaces ${replacedLabel(p.replaces, v.priceTableVersion)}`}
                    {p.kept.length > 0 && ` (keeps its ${p.kept.map((k) => KEPT_WORDS[k]).join(', ')})`}
                  </td>
                  <td>
                    {isAdmin && p.source === 'api' && (
                      <button className="link" onClick={() => act(() => client.deleteModelPrice(p.model))}>
                        Remove
                      </button>
                    )}
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
          {v.pricesInEffect.length === 0 && <p className="muted">No overrides: the price table applies to every model.</p>}
          {/* a value the browser refuses (1.5 as max output) stops the submit: an earlier server error must not stay beside it (fresh tester) */}
          {isAdmin && (
          <form className="inline" onSubmit={addPrice} onInvalidCapture={() => setError('')}>
            <input placeholder="model" value={model} onChange={(e) => setModel(e.target.value)} required aria-label="price model" />
            {PRICE_FIELDS.map(([k, label]) => (
              <input key={k} type="number" min="0" step="any" placeholder={label} aria-label={`price ${label}`} value={price[k]} onChange={(e) => setPrice({ ...price, [k]: e.target.value })} style={{ width: '7rem' }} />
            ))}
            <input type="number" min="0" step="any" placeholder="web search /1k" aria-label="price web search" value={webSearch} onChange={(e) => setWebSearch(e.target.value)} style={{ width: '7rem' }} />
            <input type="number" min="1" step="1" placeholder="max output" aria-label="price max output" value={maxOutput} onChange={(e) => setMaxOutput(e.target.value)} style={{ width: '7rem' }} />
            <label title="Some models (Claude Sonnet 4 / 4.5, the newer GPT models: see flotilla models) have higher rates above a long-context threshold in the price table: an override replaces them, so say to price long calls at these rates (long-context rates of your own: flotilla models price --long-context-*)">
              <input type="checkbox" checked={flatLong} onChange={(e) => setFlatLong(e.target.checked)} aria-label="long calls at these rates" /> long calls at these rates
            </label>
            <button type="submit" data-testid="add-price">
              Set price
            </button>
          </form>
          )}
        </>
      )}
      {error && <p className="error">{error}</p>}
    </div>
  );
}
