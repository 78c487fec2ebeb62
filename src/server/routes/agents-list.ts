import type { Hono } from 'hono';
import type { AppEnv } from '../auth.js';
import type { ServerContext } from '../context.js';

/** `GET /api/agents` → `{ agents: AgentDefinition[] }` (sorted by name, prompt text included). */
export function mountListAgents(app: Hono<AppEnv>, ctx: ServerContext): void {
  app.get('/api/agents', (c) => c.json({ agents: ctx.agents.list() }));
}
