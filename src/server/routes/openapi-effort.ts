import { error, json, ref, schemaOf, type Json } from '../openapi-kit.js';
import { EffortTierList, EffortTierView, SetEffortTierRequest } from '../../protocol/index.js';

/** The OpenAPI schemas and paths of the effort tiers (routes/effort-tiers.ts), merged by routes/openapi.ts. */
export function effortTiersOpenApi(): { schemas: Json; paths: Json } {
  const unauthorized = error('missing or unknown API token (`unauthorized`)');
  const forbidden = error('`forbidden`: needs an admin (members read, admins change)');
  const name = { name: 'name', in: 'path', required: true, description: 'tier name (`^[a-z][a-z0-9-]{0,63}$`)', schema: { type: 'string' } };
  return {
    schemas: {
      EffortTierView: schemaOf(EffortTierView, 'output'),
      EffortTierList: schemaOf(EffortTierList, 'output'),
      SetEffortTierRequest: schemaOf(SetEffortTierRequest, 'input'),
    },
    paths: {
      '/api/effort-tiers': {
        get: {
          summary: 'Effort tiers in effect (built-in, configured, account; account wins) and the default tier',
          responses: { 200: { description: 'the tiers', content: json(ref('EffortTierList')) }, 401: unauthorized },
        },
      },
      '/api/effort-tiers/{name}': {
        put: {
          summary: 'Create or replace an account tier: model + effort level (admin)',
          parameters: [name],
          requestBody: { required: true, content: json(ref('SetEffortTierRequest')) },
          responses: { 200: { description: 'the tier', content: json(ref('EffortTierView')) }, 400: error('`invalid_json` or `invalid_request` (names `name`, `model` or `level`)'), 401: unauthorized, 403: forbidden },
        },
        delete: {
          summary: 'Remove an account tier (admin); built-in and configured tiers cannot be removed',
          parameters: [name],
          responses: { 204: { description: 'removed' }, 401: unauthorized, 403: forbidden, 404: error('`not_found`: no account tier of that name'), 409: error('`tier_in_use`: it is the stored default tier (set another default first)') },
        },
      },
    },
  };
}
