import { error, json, ref, schemaOf, type Json } from '../openapi-kit.js';
import { JobEventPage, MAX_ID, RunnerActivity, SetDefaultTierRequest } from '../../protocol/index.js';

/**
 * The OpenAPI schemas and paths of the dashboard's history reads and the default tier (issue 8:
 * routes/jobs-event-page.ts, runners-activity.ts, effort-default.ts), merged by routes/openapi.ts.
 * The task conversation is documented with the tasks (tasks/openapi.ts).
 */
export function dashboardOpenApi(): { schemas: Json; paths: Json } {
  const ok = (description: string, schema: Json) => ({ description, content: json(schema) });
  const unauthorized = error('missing or unknown API token (`unauthorized`)');
  const forbidden = error('`forbidden`: needs an admin (members read, admins change)');
  const idParam = { name: 'id', in: 'path', required: true, schema: { type: 'integer', minimum: 1, maximum: MAX_ID } };
  return {
    schemas: {
      JobEventPage: schemaOf(JobEventPage, 'output'),
      RunnerActivity: schemaOf(RunnerActivity, 'output'),
      SetDefaultTierRequest: schemaOf(SetDefaultTierRequest, 'input'),
    },
    paths: {
      '/api/jobs/{id}/events/page': {
        get: {
          summary: "A page of a job's events, read from the end (the tail first, older pages with `before`)",
          parameters: [
            idParam,
            { name: 'before', in: 'query', description: 'only events with a smaller seq (default: the newest)', schema: { type: 'integer', minimum: 1, maximum: MAX_ID } },
            { name: 'limit', in: 'query', schema: { type: 'integer', minimum: 1, maximum: 2000, default: 300 } },
          ],
          responses: { 200: ok('events ascending, and how many older ones remain', ref('JobEventPage')), 400: error('`invalid_request` (names `id`, `before` or `limit`)'), 401: unauthorized, 404: error('`not_found`') },
        },
      },
      '/api/runners/{id}/activity': {
        get: {
          summary: "A runner's activity, newest first: status and hold changes as they happened, its jobs' starts and ends with their result",
          parameters: [idParam, { name: 'limit', in: 'query', schema: { type: 'integer', minimum: 1, maximum: 200, default: 50 } }],
          responses: { 200: ok('the activity', ref('RunnerActivity')), 400: error('`invalid_request` (names `limit`)'), 401: unauthorized, 404: error('`not_found`') },
        },
      },
      '/api/effort-default': {
        put: {
          summary: 'Set the account default effort tier (admin); `null` falls back to the server\'s FLOTILLA_DEFAULT_EFFORT',
          requestBody: { required: true, content: json(ref('SetDefaultTierRequest')) },
          responses: { 200: ok('the tiers and the new default', ref('EffortTierList')), 400: error('`invalid_json` or `invalid_request` (names `tier`)'), 401: unauthorized, 403: forbidden, 404: error('`unknown_tier`: no tier of that name is in effect') },
        },
      },
    },
  };
}
