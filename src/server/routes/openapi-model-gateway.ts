import { json, ref, type Json } from '../openapi-kit.js';

/**
 * The OpenAPI schemas and paths of the model gateway's wire routes (gateway/gateway.ts:
 * `POST /v1/messages`, `/v1/messages/count_tokens`, `/v1/chat/completions`, `/v1/responses`),
 * merged into the document by routes/openapi.ts. Each is called with a live job token (flj_),
 * as `x-api-key` or `Authorization: Bearer` (security schemes `jobToken` / `jobTokenBearer`),
 * and answers errors in its wire format's own shape (`AnthropicError` for the Messages routes,
 * `OpenAiError` for the OpenAI ones), not the control plane's `ApiErrorBody`.
 */
export function modelGatewayOpenApi(): { schemas: Json; paths: Json } {
  const anthropic = (description: string) => ({ description, content: json(ref('AnthropicError')) });
  const openai = (description: string) => ({ description, content: json(ref('OpenAiError')) });
  // Either header carries the job token.
  const security = [{ jobToken: [] }, { jobTokenBearer: [] }];
  const body = (description: string, required: string[]): Json => ({
    required: true,
    content: json({ type: 'object', description, required, additionalProperties: true }),
  });
  const noRetry = 'with `x-should-retry: false`';
  const anthropicRefusals = (budgetRefusal: string): Json => ({
    401: anthropic(`\`authentication_error\` ${noRetry}: no job token, or an unknown one, or its job is no longer running`),
    402: anthropic(`\`billing_error\` ${noRetry}: ${budgetRefusal}`),
    404: anthropic('`not_found_error`: no model route matches the model (see `flotilla models`)'),
    413: anthropic('`request_too_large`: the body is over the gateway\'s request size limit'),
    429: anthropic('`rate_limit_error` with `retry-after`: calls in flight hold the rest of the tree\'s budget; retry once they settle'),
    500: anthropic(`\`api_error\` ${noRetry}: the model's provider has no key on this server (names the setting)`),
    502: anthropic(`\`api_error\` ${noRetry}: the model provider could not be reached, or its reply broke or was too large`),
  });
  const openaiRoute = (summary: string, bodyText: string, required: string[]): Json => ({
    post: {
      summary,
      security,
      requestBody: body(bodyText, required),
      responses: {
        200: { description: 'the OpenAI reply as the provider sent it (JSON, or SSE when `stream` is true), keys masked' },
        400: openai(`\`invalid_request_error\` ${noRetry}: the body is not valid (\`param\` names the field), the model is served by an Anthropic provider, or its provider is not configured (\`code\` \`provider_not_configured\`)`),
        401: openai(`\`invalid_request_error\`, \`code\` \`invalid_api_key\`, ${noRetry}: no job token, or an unknown one, or its job is no longer running`),
        404: openai('`invalid_request_error`, `code` `model_not_found`: no model route matches the model'),
        413: openai('`invalid_request_error`, `code` `request_too_large`: the body is over the gateway\'s request size limit'),
        429: openai(`\`insufficient_quota\` ${noRetry}: the job tree is out of budget (the job is paused; names the budget); or \`rate_limit_exceeded\` with \`retry-after\`: calls in flight hold the rest of the budget`),
        500: openai('`server_error`: the gateway could not serve the call (e.g. a scripted model whose script did not load)'),
        502: openai(`\`server_error\` ${noRetry}: the model provider could not be reached, or its reply broke or was too large`),
        504: openai(`\`server_error\` ${noRetry}: the model provider timed out`),
      },
    },
  });
  return {
    schemas: {
      AnthropicError: {
        type: 'object',
        description: 'An error of the Messages routes, in the Anthropic API\'s shape',
        required: ['type', 'error'],
        properties: {
          type: { const: 'error' },
          error: {
            type: 'object',
            required: ['type', 'message'],
            properties: {
              type: { type: 'string', enum: ['invalid_request_error', 'authentication_error', 'billing_error', 'permission_error', 'not_found_error', 'request_too_large', 'rate_limit_error', 'api_error', 'overloaded_error'] },
              message: { type: 'string' },
            },
          },
        },
      },
      OpenAiError: {
        type: 'object',
        description: 'An error of the OpenAI routes, in the OpenAI API\'s shape',
        required: ['error'],
        properties: {
          error: {
            type: 'object',
            required: ['message', 'type', 'param', 'code'],
            properties: {
              message: { type: 'string' },
              type: { type: 'string', description: 'e.g. `invalid_request_error`, `insufficient_quota`, `requests`, `server_error`' },
              param: { type: ['string', 'null'], description: 'the request field at fault, if any' },
              code: { type: ['string', 'null'], description: 'e.g. `invalid_api_key`, `model_not_found`, `insufficient_quota`, `rate_limit_exceeded`' },
            },
          },
        },
      },
    },
    paths: {
      '/v1/messages': {
        post: {
          summary: 'Model gateway, Anthropic Messages wire format, streamed or not; the worst case is reserved against the job tree\'s budget first and the call is metered (job token as x-api-key or Bearer)',
          security,
          requestBody: body('an Anthropic Messages request (other fields pass through)', ['model', 'messages', 'max_tokens']),
          responses: {
            200: { description: 'the Anthropic Messages reply as the provider sent it (JSON, or SSE when `stream` is true), keys masked' },
            400: anthropic(`\`invalid_request_error\` ${noRetry}: the body is not a Messages request (names the field; \`max_tokens\` is required), or the model is served by an OpenAI-format provider`),
            ...anthropicRefusals('the job tree is out of budget (names the budget and what is left; the job is paused)'),
            504: anthropic(`\`api_error\` ${noRetry}: the model provider timed out`),
          },
        },
      },
      '/v1/messages/count_tokens': {
        post: {
          summary: 'Model gateway, Anthropic token counting: checked as /v1/messages is, then forwarded (anthropic) or estimated as body bytes / 4 (scripted); not charged (job token as x-api-key or Bearer)',
          security,
          requestBody: body('an Anthropic count_tokens request (no `max_tokens`)', ['model', 'messages']),
          responses: {
            200: { description: 'the token count', content: json({ type: 'object', required: ['input_tokens'], properties: { input_tokens: { type: 'integer', minimum: 0 } } }) },
            400: anthropic(`\`invalid_request_error\` ${noRetry}: the body is not a count_tokens request (names the field), or the model is served by an OpenAI-format provider`),
            ...anthropicRefusals('the job tree has no budget left at all'),
          },
        },
      },
      '/v1/chat/completions': openaiRoute(
        'Model gateway, OpenAI Chat Completions wire format, streamed or not; reserved against the job tree\'s budget first and metered (job token as Bearer or x-api-key)',
        'an OpenAI Chat Completions request (other fields pass through; set at most one of max_tokens and max_completion_tokens)',
        ['model', 'messages'],
      ),
      '/v1/responses': openaiRoute(
        'Model gateway, OpenAI Responses wire format (what Codex uses), streamed or not; reserved against the job tree\'s budget first and metered (job token as Bearer or x-api-key)',
        'an OpenAI Responses request (other fields pass through; `background: true` and state stored on the provider, e.g. `previous_response_id`, are refused)',
        ['model', 'input'],
      ),
    },
  };
}
