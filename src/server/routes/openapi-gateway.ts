import { error, json, ref, schemaOf, type Json } from '../openapi-kit.js';
import { ModelPriceOverride, ModelRoute, ModelRoutesView, SetModelPriceRequest, SetModelRouteRequest } from '../../protocol/index.js';


/**
 * The OpenAPI schemas and paths of the gateway's model routes and price overrides
 * (routes/gateway-routes.ts), merged into the document by routes/openapi.ts.
 */
export function gatewayRoutesOpenApi(): { schemas: Json; paths: Json } {
  const unauthorized = error('missing or unknown API token (`unauthorized`)');
  const forbidden = error('`forbidden`: needs an admin (members read, admins change)');
  const query = (name: string, description: string) => ({ name, in: 'query', required: true, description, schema: { type: 'string' } });
  return {
    schemas: {
      ModelRoute: schemaOf(ModelRoute, 'output'),
      ModelRoutesView: schemaOf(ModelRoutesView, 'output'),
      ModelPriceOverride: schemaOf(ModelPriceOverride, 'output'),
      SetModelRouteRequest: schemaOf(SetModelRouteRequest, 'input'),
      SetModelPriceRequest: schemaOf(SetModelPriceRequest, 'input'),
    },
    paths: {
      '/api/gateway/routes': {
        get: {
          summary: "The gateway's model routes in the order tried (API routes, configured ones, defaults), the API's price overrides as stored, every price in effect other than the table's with its source (flotilla.yaml or api, and the entry it replaced: `pricesInEffect`) and the price table version",
          responses: { 200: { description: 'routes and prices', content: json(ref('ModelRoutesView')) }, 401: unauthorized },
        },
        put: {
          summary: 'Route model names matching a pattern (exact or glob; `*` = the default) to a provider (admin); every replica applies it within 2 s',
          requestBody: { required: true, content: json(ref('SetModelRouteRequest')) },
          responses: { 200: { description: 'the route', content: json(ref('ModelRoute')) }, 400: error('`invalid_json` or `invalid_request` (names `pattern` or `provider`)'), 401: unauthorized, 403: forbidden },
        },
        delete: {
          summary: 'Remove an API model route (admin); configured routes (flotilla.yaml) cannot be removed here',
          parameters: [query('pattern', 'the pattern as set')],
          responses: { 204: { description: 'removed' }, 400: error('`invalid_request` (no `pattern`)'), 401: unauthorized, 403: forbidden, 404: error('`not_found`: no API route for that pattern') },
        },
      },
      '/api/gateway/prices': {
        put: {
          summary: 'Override the price of a model, USD per million tokens per token category (admin); cache rates left out are the input rate times the ratios of the price table entry the override replaces (gpt-4o reads at × 0.5; a model the table does not list: × 1.25 for 5-minute writes, × 2 for 1-hour writes, × 0.1 for reads), long-context rates alike',
          requestBody: { required: true, content: json(ref('SetModelPriceRequest')) },
          responses: { 200: { description: 'the override', content: json(ref('ModelPriceOverride')) }, 400: error('`invalid_json` or `invalid_request` (names the field)'), 401: unauthorized, 403: forbidden },
        },
        delete: {
          summary: 'Remove a price override (admin)',
          parameters: [query('model', 'the model name as set')],
          responses: { 204: { description: 'removed' }, 400: error('`invalid_request` (no `model`)'), 401: unauthorized, 403: forbidden, 404: error('`not_found`: no override for that model') },
        },
      },
    },
  };
}
