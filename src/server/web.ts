import { readFile, stat } from 'node:fs/promises';
import { extname, join, normalize, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Hono } from 'hono';
import type { AppEnv } from './auth.js';

/**
 * The built dashboard (`vite build` of web/ → `dist/web/`). The same relative path works from
 * src/server/ (vitest) and dist/server/ (built).
 */
export const WEB_DIST_DIR = fileURLToPath(new URL('../../dist/web/', import.meta.url));

const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.ico': 'image/x-icon',
  '.json': 'application/json',
  '.map': 'application/json',
};

/** Security headers of every dashboard reply: no framing, no inline script, same-origin only. */
const HEADERS: Record<string, string> = {
  'content-security-policy': "default-src 'self'; img-src 'self' data:; style-src 'self' 'unsafe-inline'; connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'",
  'x-frame-options': 'DENY',
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'same-origin',
};

/** Paths that are never the dashboard (the API, the gateway, health, OpenAPI). */
function isApiPath(path: string): boolean {
  return path.startsWith('/api/') || path === '/api' || path.startsWith('/v1/') || path === '/healthz' || path === '/openapi.json';
}

/**
 * Serves the dashboard at `/`: files under `/assets/` (hashed names, cached for a year), and
 * `index.html` (no-cache) for every other GET that is not an API path, so client-side routes
 * (`/jobs/12`) load the app. Pages hold no data: everything is fetched through the API, which
 * checks the session and role. When `dist/web` is missing: 503 naming the build command.
 * Register after the API routes.
 */
export function mountWeb(app: Hono<AppEnv>, dir: string = WEB_DIST_DIR): void {
  const root = normalize(dir.endsWith(sep) ? dir : dir + sep);
  app.on(['GET', 'HEAD'], '*', async (c, next) => {
    const path = c.req.path;
    if (isApiPath(path)) return next();
    const isAsset = path.startsWith('/assets/') || /^\/[\w.-]+\.(svg|png|ico)$/.test(path);
    let file = isAsset ? normalize(join(root, decodeURIComponent(path))) : join(root, 'index.html');
    if (!file.startsWith(root)) return c.text('not found', 404);
    try {
      if (!(await stat(file)).isFile()) file = join(root, 'index.html');
    } catch {
      if (isAsset) return c.text('not found', 404);
      return c.text('The dashboard is not built: run `npm run build` (it runs `vite build` into dist/web).', 503);
    }
    const body = await readFile(file);
    for (const [k, v] of Object.entries(HEADERS)) c.header(k, v);
    c.header('content-type', TYPES[extname(file)] ?? 'application/octet-stream');
    c.header('cache-control', isAsset && path.startsWith('/assets/') ? 'public, max-age=31536000, immutable' : 'no-cache');
    if (c.req.method === 'HEAD') return c.body(null);
    return c.body(new Uint8Array(body).buffer as ArrayBuffer);
  });
}
