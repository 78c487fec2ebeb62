import type { Hono } from 'hono';
import { agentsInstallOpenApi } from './openapi-agents.js';
import {
  AgentDefinition,
  ApiErrorBody,
  CreateJobRequest,
  CreateRunnerTokenRequest,
  RunnerTokenInfo,
  RunnerTokenList,
  Job,
  JobEvent,
  JobList,
  RegisterRunnerRequest,
  RegisterRunnerResponse,
  Runner,
  RunnerList,
  RunnerDetail,
  RunnerStatus,
  HoldRunnerRequest,
  SetRunnerCapacityRequest,
  UpdateRunnerRequest,
  UpdateRunnerResponse,
  StartJobRequest,
  SignInRequest,
  SessionInfo,
  User,
  CreateUserRequest,
  ApiTokenInfo,
  CreateApiTokenRequest,
  CreatedApiToken,
  TopUpRequest,
  BudgetView,
  CostRollup,
  JobTree,
  MAX_ID,
} from '../../protocol/index.js';
import type { AppEnv } from '../auth.js';
import { gatewayRoutesOpenApi } from './openapi-gateway.js';
import { modelGatewayOpenApi } from './openapi-model-gateway.js';
import { effortTiersOpenApi } from './openapi-effort.js';
import { dashboardOpenApi } from './openapi-dashboard.js';
import { error, json, ref, schemaOf, type Json } from '../openapi-kit.js';
import { tasksOpenApi } from '../tasks/openapi.js';

const body = (name: string) => ({ required: true, content: json(ref(name)) });
/** An action that takes no fields: no body, or `{}` (routes/empty-body.ts). */
const noFields = { required: false, content: json({ type: 'object', additionalProperties: false, maxProperties: 0 }) };
const ok = (description: string, schema: Json) => ({ description, content: json(schema) });
const idParam = { name: 'id', in: 'path', required: true, schema: { type: 'integer', minimum: 1, maximum: MAX_ID } };
const unauthorized = error('missing or unknown API token (`unauthorized`)');
const arrayOf = (key: string, name: string): Json => ({
  type: 'object',
  required: [key],
  properties: { [key]: { type: 'array', items: ref(name) } },
});

/**
 * The OpenAPI 3.1 document of the HTTP API, built from the protocol zod schemas
 * (`z.toJSONSchema`; request bodies as input shapes, so defaulted fields are optional).
 */
export function buildOpenApi(): Json {
  const schemas: Json = {
    ApiErrorBody: schemaOf(ApiErrorBody, 'output'),
    CreateJobRequest: schemaOf(CreateJobRequest, 'input'),
    Job: schemaOf(Job, 'output'),
    JobList: schemaOf(JobList, 'output'),
    JobTree: schemaOf(JobTree, 'output'),
    JobEvent: schemaOf(JobEvent, 'output'),
    Runner: schemaOf(Runner, 'output'),
    RunnerList: schemaOf(RunnerList, 'output'),
    RunnerDetail: schemaOf(RunnerDetail, 'output'),
    HoldRunnerRequest: schemaOf(HoldRunnerRequest, 'input'),
    SetRunnerCapacityRequest: schemaOf(SetRunnerCapacityRequest, 'input'),
    UpdateRunnerRequest: schemaOf(UpdateRunnerRequest, 'input'),
    UpdateRunnerResponse: schemaOf(UpdateRunnerResponse, 'output'),
    StartJobRequest: schemaOf(StartJobRequest, 'input'),
    CreateRunnerTokenRequest: schemaOf(CreateRunnerTokenRequest, 'input'),
    RunnerTokenResponse: {
      type: 'object',
      required: ['id', 'token', 'expiresAt'],
      properties: {
        id: { type: 'integer', minimum: 1, maximum: MAX_ID, description: 'names the token in GET /api/runner-tokens and for revoking it' },
        token: { type: 'string', description: 'flr_... (shown once)' },
        expiresAt: { type: 'string', format: 'date-time' },
      },
    },
    RunnerTokenInfo: schemaOf(RunnerTokenInfo, 'output'),
    RunnerTokenList: schemaOf(RunnerTokenList, 'output'),
    RegisterRunnerRequest: schemaOf(RegisterRunnerRequest, 'input'),
    RegisterRunnerResponse: schemaOf(RegisterRunnerResponse, 'output'),
    AgentDefinition: schemaOf(AgentDefinition, 'output'),
    SignInRequest: schemaOf(SignInRequest, 'input'),
    SessionInfo: schemaOf(SessionInfo, 'output'),
    User: schemaOf(User, 'output'),
    CreateUserRequest: schemaOf(CreateUserRequest, 'input'),
    ApiTokenInfo: schemaOf(ApiTokenInfo, 'output'),
    CreateApiTokenRequest: schemaOf(CreateApiTokenRequest, 'input'),
    CreatedApiToken: schemaOf(CreatedApiToken, 'output'),
    TopUpRequest: schemaOf(TopUpRequest, 'input'),
    BudgetView: schemaOf(BudgetView, 'output'),
    CostRollup: schemaOf(CostRollup, 'output'),
  };
  const forbidden = error('`forbidden`: needs an admin (members read, admins change), or `csrf`: a browser session without the x-flotilla-csrf header');
  const paths: Json = {
    '/api/jobs': {
      post: {
        summary: 'Create a job',
        requestBody: body('CreateJobRequest'),
        responses: {
          201: ok('the job: queued, or already assigned when a runner here was free', ref('Job')),
          400: error('`invalid_json` or `invalid_request` (names the field)'),
          401: unauthorized,
          403: error('`forbidden`: members may only read'),
          404: error('`unknown_agent`'),
          422: error('`invalid_input`: the input fails the agent\'s inputSchema (e.g. `input.repo: must be string`)'),
        },
      },
      get: {
        summary: 'List jobs, newest first',
        parameters: [
          { name: 'status', in: 'query', schema: schemaOf(Job.shape.status, 'output') },
          { name: 'agent', in: 'query', schema: { type: 'string' } },
          { name: 'limit', in: 'query', schema: { type: 'integer', minimum: 1, maximum: 200, default: 50 } },
          { name: 'before', in: 'query', description: 'nextCursor of the previous page', schema: { type: 'integer', minimum: 1, maximum: MAX_ID } },
          { name: 'runner', in: 'query', description: 'runner id', schema: { type: 'integer', minimum: 1, maximum: MAX_ID } },
          { name: 'from', in: 'query', description: 'createdAt >= (ISO-8601)', schema: { type: 'string', format: 'date-time' } },
          { name: 'to', in: 'query', description: 'createdAt < (ISO-8601)', schema: { type: 'string', format: 'date-time' } },
        ],
        responses: { 200: ok('a page of jobs', ref('JobList')), 400: error('`invalid_request`'), 401: unauthorized },
      },
    },
    '/api/jobs/{id}': {
      get: {
        summary: 'One job, with usage',
        parameters: [idParam],
        responses: { 200: ok('the job', ref('Job')), 401: unauthorized, 404: error('`not_found`') },
      },
    },
    '/api/jobs/{id}/cancel': {
      post: {
        summary: 'Cancel a job',
        parameters: [idParam],
        responses: { 200: ok('the cancelled job', ref('Job')), 401: unauthorized, 404: error('`not_found`'), 409: error('`not_cancellable`: already ended') },
      },
    },
    '/api/jobs/{id}/events': {
      get: {
        summary: 'Follow a job\'s events (Server-Sent Events)',
        description:
          'Each event: `id: <seq>`, `event: job`, `data: <JobEvent JSON>`. Resume with the `Last-Event-ID` header or `?after=<seq>`. ' +
          'When the job has ended and every event was sent: `event: end`, `data: {"status": ...}`, then the stream closes.',
        parameters: [
          idParam,
          { name: 'Last-Event-ID', in: 'header', schema: { type: 'integer', minimum: 0, maximum: MAX_ID } },
          { name: 'after', in: 'query', schema: { type: 'integer', minimum: 0, maximum: MAX_ID } },
        ],
        responses: {
          200: { description: 'event stream', content: { 'text/event-stream': { schema: ref('JobEvent') } } },
          400: error('`invalid_request`'),
          401: unauthorized,
          404: error('`not_found`'),
        },
      },
    },
    '/api/runners': {
      get: {
        summary: 'List runners (status, slots = runningJobs of capacity, hold) and the queued count',
        parameters: [
          { name: 'label', in: 'query', schema: { type: 'string' }, description: 'k=v,k2=v2: runners with all these labels' },
          { name: 'status', in: 'query', schema: schemaOf(RunnerStatus, 'output'), description: 'one status' },
          { name: 'role', in: 'query', schema: { type: 'string' }, description: 'short for label=role=R' },
        ],
        responses: { 200: ok('runners', ref('RunnerList')), 400: error('`invalid_request` naming the parameter'), 401: unauthorized },
      },
    },
    '/api/runners/{id}': {
      get: { summary: 'One runner and its recent jobs', parameters: [idParam], responses: { 200: ok('the runner', ref('RunnerDetail')), 401: unauthorized, 404: error('`not_found`') } },
      patch: {
        summary: "Set a runner's capacity (parallel jobs 1–4) and browser slots (1–4, ≤ capacity); null clears the owner setting (admin)",
        parameters: [idParam],
        requestBody: body('SetRunnerCapacityRequest'),
        responses: { 200: ok('the runner', ref('Runner')), 400: error('`invalid_request` naming the field'), 401: unauthorized, 403: forbidden, 404: error('`not_found`'), 409: error('`revoked`: the runner was revoked') },
      },
    },
    '/api/runners/{id}/hold': {
      post: {
        summary: 'Hold a runner: no queued job goes to it until the hold ends (admin)',
        parameters: [idParam],
        requestBody: body('HoldRunnerRequest'),
        responses: { 200: ok('the runner, on_hold', ref('Runner')), 400: error('`invalid_request`'), 401: unauthorized, 403: forbidden, 404: error('`not_found`'), 409: error('`not_held`: nothing to extend; `hold_too_long`: it would end more than 7 days from now; `revoked`: the runner was revoked') },
      },
    },
    '/api/runners/{id}/resume': {
      post: {
        summary: 'End a runner\'s hold (admin)',
        parameters: [idParam],
        requestBody: noFields,
        responses: { 200: ok('the runner', ref('Runner')), 400: error('`invalid_json` / `invalid_request`: a body other than none or {}'), 401: unauthorized, 403: forbidden, 404: error('`not_found`') },
      },
    },
    '/api/runners/{id}/revoke': {
      post: {
        summary: 'Revoke a runner: its connection and job tokens end; its credential is refused (admin)',
        parameters: [idParam],
        requestBody: noFields,
        responses: { 200: ok('the revoked runner, status revoked', ref('Runner')), 400: error('`invalid_json` / `invalid_request`: a body other than none or {}'), 401: unauthorized, 403: forbidden, 404: error('`not_found`') },
      },
    },
    '/api/runners/{id}/update': {
      post: {
        summary: 'Tell a runner to update itself (admin): status updating, no new job; it drains its jobs, runs its update command and re-executes on the new code',
        parameters: [idParam],
        requestBody: { required: false, content: json(ref('UpdateRunnerRequest')) },
        responses: {
          200: ok('the runner (status updating), the version asked for (absent in the body: the server\'s own), and started: false when it was updating already', ref('UpdateRunnerResponse')),
          400: error('`invalid_json` / `invalid_request` naming the field'),
          401: unauthorized,
          403: forbidden,
          404: error('`not_found`'),
          409: error('`revoked`, `offline`, `cannot_update` (the runner inside `flotilla up`, which cannot restart itself), or `not_connected`: it is connected to another server replica'),
        },
      },
    },
    '/api/jobs/{id}/start': {
      post: {
        summary: 'Place a queued job now (admin); force goes past capacity and holds',
        parameters: [idParam],
        requestBody: body('StartJobRequest'),
        responses: {
          200: ok('the job, assigned', ref('Job')),
          401: unauthorized,
          403: forbidden,
          404: error('`not_found`'),
          409: error('`not_queued`, `no_runner`, `not_connected` (the runner is connected to another server replica), `on_hold` or `over_capacity` (repeat with force)'),
        },
      },
    },
    '/api/runner-tokens': {
      get: {
        summary: 'List runner registration tokens (admin; never a token or its hash): the live ones (unused, not revoked, not expired), or every one with all=true',
        parameters: [{ name: 'all', in: 'query', schema: { type: 'string', enum: ['true', 'false'] }, description: 'true: also used, expired and revoked tokens' }],
        responses: { 200: ok('tokens, oldest first', ref('RunnerTokenList')), 400: error('`invalid_request` naming the parameter'), 401: unauthorized, 403: forbidden },
      },
      post: {
        summary: 'Create a runner registration token (admin)',
        requestBody: body('CreateRunnerTokenRequest'),
        responses: {
          201: ok('a single-use registration token', ref('RunnerTokenResponse')),
          400: error('`invalid_json` or `invalid_request`'),
          401: unauthorized,
          403: error('`forbidden`: needs an admin token'),
        },
      },
    },
    '/api/runner-tokens/{id}/revoke': {
      post: {
        summary: 'Revoke a runner registration token (admin): registration refuses it from now on, like a used or expired one; repeating it changes nothing; a used token stays used',
        parameters: [idParam],
        responses: { 200: ok('the token', ref('RunnerTokenInfo')), 400: error('`invalid_request`: id outside 1..2147483647'), 401: unauthorized, 403: forbidden, 404: error('`not_found`: no token with that id') },
      },
    },
    '/api/runners/register': {
      post: {
        summary: 'Trade a registration token for a runner credential',
        security: [],
        requestBody: body('RegisterRunnerRequest'),
        responses: {
          201: ok('the new runner and its credential (shown once)', ref('RegisterRunnerResponse')),
          400: error('`invalid_json` or `invalid_request`'),
          401: error('`unauthorized`: registration token unknown, used, expired or revoked'),
        },
      },
    },
    '/api/runners/connect': {
      get: {
        summary: 'Runner WebSocket (runner credential as Bearer); frames per protocol/runner-messages.ts',
        security: [{ runnerCredential: [] }],
        responses: { 101: { description: 'switching to WebSocket' }, 401: error('`unauthorized`: unknown runner credential') },
      },
    },
    '/api/agents': {
      get: { summary: 'List agents', responses: { 200: ok('agents', arrayOf('agents', 'AgentDefinition')), 401: unauthorized } },
    },
    '/api/session': {
      post: {
        summary: 'Sign in (dashboard): sets the HttpOnly SameSite=Strict session cookie; needs the x-flotilla-csrf header',
        security: [],
        requestBody: body('SignInRequest'),
        responses: { 200: ok('signed in', ref('SessionInfo')), 400: error('`invalid_request`'), 401: error('`bad_credentials`'), 403: error('`csrf`'), 429: error('`too_many_attempts`: too many failed sign-ins for the name or from the address; wait `Retry-After` seconds') },
      },
      get: { summary: 'Who is calling (token or signed-in user) and their role', responses: { 200: ok('the caller', ref('SessionInfo')), 401: unauthorized } },
    },
    '/api/session/logout': {
      post: { summary: 'Sign out: ends the cookie session', responses: { 204: { description: 'signed out' }, 401: unauthorized } },
    },
    '/api/users': {
      get: { summary: 'List users (admin)', responses: { 200: ok('users', arrayOf('users', 'User')), 401: unauthorized, 403: forbidden } },
      post: {
        summary: 'Create a user (admin); the password is stored as a scrypt hash',
        requestBody: body('CreateUserRequest'),
        responses: { 201: ok('the user', ref('User')), 400: error('`invalid_request`'), 401: unauthorized, 403: forbidden, 409: error('`conflict`: name taken') },
      },
    },
    '/api/tokens': {
      get: { summary: 'List API tokens (admin; no secrets)', responses: { 200: ok('tokens', arrayOf('tokens', 'ApiTokenInfo')), 401: unauthorized, 403: forbidden } },
      post: {
        summary: 'Create an API token (admin); the token is shown once',
        requestBody: body('CreateApiTokenRequest'),
        responses: { 201: ok('the token', ref('CreatedApiToken')), 400: error('`invalid_request`'), 401: unauthorized, 403: forbidden },
      },
    },
    '/api/tokens/{id}': {
      delete: {
        summary: 'Revoke an API token (admin)',
        parameters: [idParam],
        responses: { 204: { description: 'revoked' }, 401: unauthorized, 403: forbidden, 404: error('`not_found`'), 409: error('`conflict`: the token of this request') },
      },
    },
    '/healthz': {
      get: {
        summary:
          "Liveness. With `adminTokenChallenge` (64 lowercase hex), while this server's data-folder admin token is valid: `adminTokenProof`, HMAC-SHA256 keyed by the token's SHA-256 hex over `flotilla admin-token proof\\n` + the challenge (the CLI checks it before sending that token)",
        security: [],
        parameters: [{ name: 'adminTokenChallenge', in: 'query', required: false, schema: { type: 'string', pattern: '^[0-9a-f]{64}$' } }],
        responses: { 200: ok('healthy', { type: 'object', properties: { ok: { type: 'boolean' }, store: { type: 'string', enum: ['sqlite', 'postgres'] }, adminTokenProof: { type: 'string' } } }), 503: { description: 'store unavailable' } },
      },
    },
    '/openapi.json': {
      get: { summary: 'This document', security: [], responses: { 200: ok('OpenAPI 3.1 document', { type: 'object' }) } },
    },
    '/api/jobs/{id}/tree': {
      get: {
        summary: 'The job and all its descendants: status, agent, runner, tokens and cost (µ$) per node, children, and the subtree total (issue 6)',
        parameters: [idParam],
        responses: { 200: ok('the job tree', ref('JobTree')), 400: error('`invalid_request`'), 401: unauthorized, 403: error('a job token asking for a job outside its tree (`forbidden`)'), 404: error('`not_found`') },
      },
    },
    '/api/jobs/{id}/budget': {
      get: {
        summary: "The budget the job uses — its own sub-limit, else its nearest sub-limited ancestor's, else its tree's (µ$: limit, spent, reserved by calls in flight; remaining: the least room on the job's path, boundedBy: the budget with that room when another; resumeNeeds: what would resume a job paused for budget)",
        parameters: [idParam],
        responses: { 200: ok('the budget the job uses', ref('BudgetView')), 400: error('`invalid_request`'), 401: unauthorized, 404: error('`not_found`') },
      },
      post: {
        summary: "Top up the budget the job uses (its own sub-limit, else its nearest sub-limited ancestor's, else its tree's); the paused jobs it gave room resume in their sessions",
        parameters: [idParam],
        requestBody: body('TopUpRequest'),
        responses: {
          200: ok('the new budget and the resumed job ids', ref('BudgetView')),
          400: error('`invalid_json` or `invalid_request` (names `addUsd`; also a top-up that would raise the tree past the $100,000 cap, naming the most that can be added)'),
          401: unauthorized,
          403: forbidden,
          404: error('`not_found`'),
          409: error("`job_ended`: nothing can spend the budget any more: for the tree's, its root job has ended (succeeded, failed, cancelled, lost); for a sub-limit, its child job or an ancestor of that child has ended (a sub-limit applies only to its child and that child's descendants)"),
          422: error('`budget_exceeded`: a sub-limit\'s room may not grow past the least room above it (its sub-limited ancestors\' and the tree\'s); names the bounding budget'),
        },
      },
    },
    '/api/costs': {
      get: {
        summary: "Cost rollups of the gateway's ledger",
        parameters: [
          { name: 'by', in: 'query', schema: { type: 'string', enum: ['job', 'tree', 'agent', 'runner', 'day'], default: 'agent' } },
          { name: 'since', in: 'query', description: '`30m`, `12h`, `7d`, `2w` or an ISO-8601 date (default 30d)', schema: { type: 'string' } },
          { name: 'root', in: 'query', description: 'only this job tree', schema: { type: 'integer', minimum: 1, maximum: MAX_ID } },
        ],
        responses: { 200: ok('calls, tokens and cost per group, biggest first, and the total', ref('CostRollup')), 400: error('`invalid_request` (names `by`, `since` or `root`)'), 401: unauthorized },
      },
    },
  };
  // The model gateway's wire routes (/v1/messages, count_tokens, chat/completions, responses).
  const mg = modelGatewayOpenApi();
  Object.assign(schemas, mg.schemas);
  Object.assign(paths, mg.paths);
  // The gateway's model routes and prices (issue 3).
  const gw = gatewayRoutesOpenApi();
  Object.assign(schemas, gw.schemas);
  Object.assign(paths, gw.paths);
  // Effort tiers (issue 8).
  const et = effortTiersOpenApi();
  Object.assign(schemas, et.schemas);
  Object.assign(paths, et.paths);
  // Agent installs (issue 6).
  const ai = agentsInstallOpenApi();
  Object.assign(schemas, ai.schemas);
  Object.assign(paths, ai.paths);
  // The dashboard's history reads and the default tier (issue 8).
  const db = dashboardOpenApi();
  Object.assign(schemas, db.schemas);
  Object.assign(paths, db.paths);
  // Tasks, receivers and webhooks (issue 7).
  const tk = tasksOpenApi();
  Object.assign(schemas, tk.schemas);
  Object.assign(paths, tk.paths);
  return {
    openapi: '3.1.0',
    info: { title: 'Flotilla control plane', version: '0.1.0' },
    security: [{ apiToken: [] }, { session: [] }],
    paths,
    components: {
      schemas,
      securitySchemes: {
        apiToken: { type: 'http', scheme: 'bearer', description: 'API token (fla_...)' },
        session: { type: 'apiKey', in: 'cookie', name: 'flotilla_session', description: 'dashboard session (POST /api/session); state-changing calls also need the x-flotilla-csrf header' },
        runnerCredential: { type: 'http', scheme: 'bearer', description: 'runner credential (flc_...)' },
        jobToken: { type: 'apiKey', in: 'header', name: 'x-api-key', description: 'job token (flj_...) as x-api-key' },
        jobTokenBearer: { type: 'http', scheme: 'bearer', description: 'job token (flj_...) as Authorization: Bearer' },
      },
    },
  };
}

/** `GET /openapi.json` (public). */
export function mountOpenApi(app: Hono<AppEnv>): void {
  let doc: Json | null = null;
  app.get('/openapi.json', (c) => c.json((doc ??= buildOpenApi())));
}
