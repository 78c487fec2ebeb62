import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from './test-helpers.js';

describe('GET /openapi.json', () => {
  let t: TestServer;
  beforeAll(async () => {
    t = await startTestServer();
  });
  afterAll(() => t.close());

  it('lists every route with its body and responses', async () => {
    const res = await t.api('/openapi.json', { token: null });
    expect(res.status).toBe(200);
    type Op = { requestBody?: { content: Record<string, { schema: { $ref: string } }> }; responses: Record<string, unknown> };
    const doc = (await res.json()) as { openapi: string; paths: Record<string, Record<string, Op>>; components: { schemas: Record<string, Record<string, unknown>> } };
    expect(doc.openapi).toBe('3.1.0');
    const routes = Object.entries(doc.paths).flatMap(([p, ops]) => Object.keys(ops).map((m) => `${m.toUpperCase()} ${p}`));
    expect(routes.sort()).toEqual(
      [
        'POST /api/jobs',
        'GET /api/jobs',
        'GET /api/jobs/{id}',
        'POST /api/jobs/{id}/cancel',
        'GET /api/jobs/{id}/budget',
        'GET /api/jobs/{id}/tree',
        'POST /api/jobs/{id}/budget',
        'GET /api/costs',
        'GET /api/tasks',
        'POST /api/tasks',
        'GET /api/tasks/{id}',
        'GET /api/tasks/{id}/conversation',
        'POST /api/tasks/{id}/send',
        'POST /api/tasks/{id}/suspend',
        'POST /api/tasks/{id}/resume',
        'POST /api/tasks/{id}/stop',
        'POST /api/tasks/{id}/complete',
        'POST /api/tasks/{id}/budget',
        'GET /api/receivers',
        'POST /api/receivers',
        'GET /api/receivers/{id}',
        'DELETE /api/receivers/{id}',
        'POST /hooks/github/{receiver}',
        'POST /hooks/gitea/{receiver}',
        'POST /hooks/generic/{receiver}',
        'GET /api/gateway/routes',
        'PUT /api/gateway/routes',
        'DELETE /api/gateway/routes',
        'PUT /api/gateway/prices',
        'DELETE /api/gateway/prices',
        'GET /api/effort-tiers',
        'PUT /api/effort-tiers/{name}',
        'DELETE /api/effort-tiers/{name}',
        'PUT /api/effort-default',
        'GET /api/jobs/{id}/events',
        'GET /api/jobs/{id}/events/page',
        'GET /api/runners',
        'GET /api/runners/{id}',
        'GET /api/runners/{id}/activity',
        'POST /api/runners/{id}/hold',
        'POST /api/runners/{id}/resume',
        'POST /api/runners/{id}/revoke',
        'POST /api/runners/{id}/update',
        'POST /api/jobs/{id}/start',
        'POST /api/runner-tokens',
        'GET /api/runner-tokens',
        'POST /api/runner-tokens/{id}/revoke',
        'POST /api/runners/register',
        'GET /api/runners/connect',
        'GET /api/agents',
        'GET /api/agents/versions',
        'POST /api/agents/install',
        'POST /api/session',
        'GET /api/session',
        'POST /api/session/logout',
        'GET /api/users',
        'POST /api/users',
        'GET /api/tokens',
        'POST /api/tokens',
        'DELETE /api/tokens/{id}',
        'GET /healthz',
        'GET /openapi.json',
        'PATCH /api/runners/{id}',
        'POST /v1/messages',
        'POST /v1/messages/count_tokens',
        'POST /v1/chat/completions',
        'POST /v1/responses',
      ].sort(),
    );
    // The model gateway's four wire routes: a job token as x-api-key or Bearer, errors in the wire format's own shape.
    type GatewayOp = { security: unknown; requestBody: { content: Record<string, { schema: { required: string[] } }> }; responses: Record<string, { content?: Record<string, { schema: { $ref: string } }> }> };
    const wire = { '/v1/messages': 'AnthropicError', '/v1/messages/count_tokens': 'AnthropicError', '/v1/chat/completions': 'OpenAiError', '/v1/responses': 'OpenAiError' };
    for (const [path, shape] of Object.entries(wire)) {
      const op = doc.paths[path]!.post as unknown as GatewayOp;
      expect(op.security, path).toEqual([{ jobToken: [] }, { jobTokenBearer: [] }]);
      expect(op.requestBody.content['application/json']!.schema.required, path).toContain('model');
      for (const status of ['400', '401', '404', '413', '429', '502']) expect(op.responses[status]?.content?.['application/json']?.schema.$ref, `${path} ${status}`).toBe(`#/components/schemas/${shape}`);
    }
    expect((doc.paths['/v1/messages']!.post as unknown as GatewayOp).requestBody.content['application/json']!.schema.required).toEqual(['model', 'messages', 'max_tokens']);
    expect(Object.keys(doc.paths['/v1/messages']!.post!.responses)).toContain('402');
    expect(Object.keys(doc.paths['/v1/chat/completions']!.post!.responses)).not.toContain('402');
    const schemes = (doc.components as unknown as { securitySchemes: Record<string, Record<string, string>> }).securitySchemes;
    expect(schemes.jobToken).toMatchObject({ type: 'apiKey', in: 'header', name: 'x-api-key' });
    expect(schemes.jobTokenBearer).toMatchObject({ type: 'http', scheme: 'bearer' });
    const create = doc.paths['/api/jobs']!.post!;
    expect(create.requestBody!.content['application/json']!.schema.$ref).toBe('#/components/schemas/CreateJobRequest');
    expect(Object.keys(create.responses).sort()).toEqual(['201', '400', '401', '403', '404', '422']);
    // Schemas come from the protocol zod schemas: input shapes leave defaulted fields optional.
    const req = doc.components.schemas.CreateJobRequest!;
    expect(req.required).toEqual(['agent']);
    expect(Object.keys(req.properties as object).sort()).toEqual(['agent', 'budgetUsd', 'effort', 'input', 'labels', 'priority', 'resumeJobId', 'role']);
    const job = doc.components.schemas.Job!;
    expect((job.required as string[]).includes('status')).toBe(true);
    // Every $ref resolves.
    const refs = JSON.stringify(doc).match(/#\/components\/schemas\/[A-Za-z]+/g) ?? [];
    for (const r of refs) expect(doc.components.schemas[r.split('/').pop()!], r).toBeDefined();
  });
});
