import { config } from 'zod';

// Imported first by main.tsx, before any module that builds a schema: zod decides at schema
// construction whether to compile object parsers with `new Function`, which the server's
// Content-Security-Policy forbids (no 'unsafe-eval'). Its probe logged a CSP violation on every
// page load (fresh-tester finding). Without eval, the same checks run interpreted.
config({ jitless: true });
