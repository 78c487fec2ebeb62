import { z } from 'zod';

/**
 * Small builders shared by every part of the OpenAPI 3.1 document (routes/openapi.ts and the
 * parts it merges: routes/openapi-agents.ts, routes/openapi-gateway.ts, tasks/openapi.ts).
 */

/** A JSON object of the document. */
export type Json = Record<string, unknown>;

/** JSON Schema of a zod schema (`z.toJSONSchema`), as its `input` or `output` shape, without `$schema`. */
export function schemaOf(schema: z.ZodType, io: 'input' | 'output'): Json {
  const s = z.toJSONSchema(schema, { io, unrepresentable: 'any' }) as Json;
  delete s.$schema;
  return s;
}

/** A reference to `#/components/schemas/<name>`. */
export const ref = (name: string): Json => ({ $ref: `#/components/schemas/${name}` });

/** An `application/json` content map for `schema`. */
export const json = (schema: Json) => ({ 'application/json': { schema } });

/** An error response: the API's `{error:{code,message,field?}}` body (`ApiErrorBody`). */
export const error = (description: string) => ({ description, content: json(ref('ApiErrorBody')) });
