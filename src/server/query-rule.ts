import type { MiddlewareHandler } from 'hono';
import { matchedRoutes } from 'hono/route';
import type { AppEnv } from './auth.js';
import { unknownQueryParam } from './http-util.js';

/** Marks the handlers made by {@link takesQuery}: a route with one checks its own query. */
const DECLARES_QUERY = Symbol('declares its query parameters');

/**
 * A route's query parameters, declared where the route is mounted
 * (`app.get('/api/costs', takesQuery('by', 'since', 'root'), handler)`): a parameter not in
 * `names`, or one of them given twice, is a 400 `invalid_request` naming it
 * (http-util.ts unknownQueryParam) before the handler runs.
 */
export function takesQuery(...names: string[]): MiddlewareHandler<AppEnv> {
  const check: MiddlewareHandler<AppEnv> = async (c, next) => unknownQueryParam(c, names) ?? next();
  return Object.assign(check, { [DECLARES_QUERY]: true });
}

/**
 * For `/api/*`: a route that declares no query parameters ({@link takesQuery}) takes none, so
 * any is a 400 naming it, never ignored (fresh-user finding: `/api/jobs/1?x=1` and a repeated
 * `after` of the events stream were read without a word). One rule for every route, the ones
 * added later included; a URL no route matches goes on to its 404.
 */
export function queryRule(): MiddlewareHandler<AppEnv> {
  return async (c, next) => {
    if (!c.req.url.includes('?')) return next();
    const routes = matchedRoutes(c);
    if (routes.some((r) => (r.handler as { [DECLARES_QUERY]?: boolean })[DECLARES_QUERY] === true)) return next();
    // no route of its own (middleware, and the dashboard's catch-all `*`, web.ts): the 404 follows
    if (!routes.some((r) => r.method !== 'ALL' && r.path !== '*' && r.path !== '/*')) return next();
    return unknownQueryParam(c, []) ?? next();
  };
}
