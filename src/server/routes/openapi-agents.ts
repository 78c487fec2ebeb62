import { error, json, ref, schemaOf, type Json } from '../openapi-kit.js';
import { AgentVersionList, InstallAgentsRequest, InstallAgentsResponse } from '../../protocol/index.js';


/**
 * The OpenAPI schemas and paths of agent installs (routes/agents-install.ts, issue 6),
 * merged into the document by routes/openapi.ts.
 */
export function agentsInstallOpenApi(): { schemas: Json; paths: Json } {
  const unauthorized = error('missing or unknown API token (`unauthorized`)');
  return {
    schemas: {
      InstallAgentsRequest: schemaOf(InstallAgentsRequest, 'input'),
      InstallAgentsResponse: schemaOf(InstallAgentsResponse, 'output'),
      AgentVersionList: schemaOf(AgentVersionList, 'output'),
    },
    paths: {
      '/api/agents/install': {
        post: {
          summary: 'Install a repository of agent definitions (git URL/path at a ref, or a plain folder) as a new version of each agent (admin); all or nothing',
          requestBody: { required: true, content: json(ref('InstallAgentsRequest')) },
          responses: {
            201: { description: 'the new versions', content: json(ref('InstallAgentsResponse')) },
            400: error('`invalid_json` or `invalid_request` (names `source` or `ref`)'),
            401: unauthorized,
            403: error('`forbidden`: needs an admin'),
            409: error('`agent_exists`: an agent would replace a built-in folder agent of the same name and `replace` is not true; nothing installed'),
            422: error('`invalid_agent` (the message names the file and the field, also when a file is absolute or leads out of the repository by `..` or a symlink; nothing installed) or `fetch_failed`'),
          },
        },
      },
      '/api/agents/versions': {
        get: {
          summary: 'Every installed agent version with its source, ref and commit',
          parameters: [{ name: 'name', in: 'query', description: 'only this agent', schema: { type: 'string' } }],
          responses: { 200: { description: 'installed versions', content: json(ref('AgentVersionList')) }, 401: unauthorized },
        },
      },
    },
  };
}
