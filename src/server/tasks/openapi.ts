import { error, json, ref, schemaOf, type Json } from '../openapi-kit.js';
import { CreatedReceiver, CreateReceiverRequest, CreateTaskRequest, HookResult, MAX_ID, Receiver, ReceiverList, SendTaskPromptRequest, Task, TaskBudgetRequest, TaskBudgetResult, TaskConversation, TaskDetail, TaskList, TaskStatus } from '../../protocol/index.js';


/**
 * The OpenAPI schemas and paths of tasks, receivers and the webhook endpoints (issue 7:
 * tasks/routes.ts, hooks/receivers-api.ts, hooks/receive.ts), merged into the document by
 * routes/openapi.ts.
 */
export function tasksOpenApi(): { schemas: Json; paths: Json } {
  const ok = (description: string, schema: Json) => ({ description, content: json(schema) });
  const body = (name: string) => ({ required: true, content: json(ref(name)) });
  const unauthorized = error('missing or unknown API token (`unauthorized`)');
  const forbidden = error('`forbidden`: needs an admin (members read, admins change)');
  const idParam = { name: 'id', in: 'path', required: true, schema: { type: 'integer', minimum: 1, maximum: MAX_ID } };
  const action = (summary: string, extra: Json = {}) => ({
    post: {
      summary,
      parameters: [idParam],
      responses: { 200: ok('the task', ref('Task')), 401: unauthorized, 403: forbidden, 404: error('`not_found`'), 409: error('`invalid_state`'), ...extra },
    },
  });
  const hook = (provider: string, auth: string) => ({
    post: {
      summary: `Webhook delivery from ${provider} (${auth}; outside the API token check)`,
      security: [],
      parameters: [{ name: 'receiver', in: 'path', required: true, schema: { type: 'string' } }],
      requestBody: { required: true, content: { 'application/json': { schema: { type: 'object' } } } },
      responses: {
        200: ok('accepted (also a repeated delivery: outcome `duplicate`; a GitHub event GitHub does not document: outcome `ignored` with `reason`, nothing stored)', ref('HookResult')),
        400: error('`invalid_json` (also a GitHub body that is not UTF-8) or `invalid_request` (missing event header; `%00` in the URL or a name no receiver can have: no store query)'),
        401: error('`bad_signature`: nothing was stored'),
        404: error('`not_found`: no receiver of this provider with that name'),
        413: error('`payload_too_large` (over 5 MiB)'),
        422: error('`invalid_request`: the routed resource key is over 1000 characters; nothing was stored'),
      },
    },
  });
  return {
    schemas: {
      Task: schemaOf(Task, 'output'),
      TaskList: schemaOf(TaskList, 'output'),
      TaskDetail: schemaOf(TaskDetail, 'output'),
      TaskConversation: schemaOf(TaskConversation, 'output'),
      CreateTaskRequest: schemaOf(CreateTaskRequest, 'input'),
      SendTaskPromptRequest: schemaOf(SendTaskPromptRequest, 'input'),
      TaskBudgetRequest: schemaOf(TaskBudgetRequest, 'input'),
      TaskBudgetResult: schemaOf(TaskBudgetResult, 'output'),
      Receiver: schemaOf(Receiver, 'output'),
      ReceiverList: schemaOf(ReceiverList, 'output'),
      CreateReceiverRequest: schemaOf(CreateReceiverRequest, 'input'),
      CreatedReceiver: schemaOf(CreatedReceiver, 'output'),
      HookResult: schemaOf(HookResult, 'output'),
    },
    paths: {
      '/api/tasks': {
        get: {
          summary: 'List tasks, newest first',
          parameters: [
            { name: 'status', in: 'query', schema: schemaOf(TaskStatus, 'output') },
            { name: 'limit', in: 'query', schema: { type: 'integer', minimum: 1, maximum: 200, default: 50 } },
            { name: 'before', in: 'query', description: 'task id cursor', schema: { type: 'integer', minimum: 1, maximum: MAX_ID } },
          ],
          responses: { 200: ok('tasks', ref('TaskList')), 400: error('`invalid_request`'), 401: unauthorized },
        },
        post: {
          summary: 'Create a task (with `prompt`: wakes at once)',
          requestBody: body('CreateTaskRequest'),
          responses: { 201: ok('the task', ref('Task')), 400: error('`invalid_json` or `invalid_request`'), 401: unauthorized, 403: forbidden, 404: error('`unknown_agent`'), 409: error('`key_taken`: an active task owns a key'), 422: error("`invalid_input`: the agent's inputSchema cannot take the task's input plus taskPrompt, taskId, taskTurn") },
        },
      },
      '/api/tasks/{id}': { get: { summary: 'One task and its newest events', parameters: [idParam], responses: { 200: ok('the task', ref('TaskDetail')), 401: unauthorized, 404: error('`not_found`') } } },
      '/api/tasks/{id}/conversation': {
        get: {
          summary: "The task's turns as a conversation: what woke each turn (prompts, events), the job that ran it and its messages; what waits for the next turn",
          parameters: [
            idParam,
            { name: 'limit', in: 'query', description: 'turns per page', schema: { type: 'integer', minimum: 1, maximum: 50, default: 20 } },
            { name: 'before', in: 'query', description: 'turn cursor: only turns below it (from `olderBefore`)', schema: { type: 'integer', minimum: 1, maximum: MAX_ID } },
          ],
          responses: { 200: ok('the conversation, oldest turn first', ref('TaskConversation')), 400: error('`invalid_request` (names `id`, `limit` or `before`)'), 401: unauthorized, 404: error('`not_found`') },
        },
      },
      '/api/tasks/{id}/send': {
        post: {
          summary: "Queue a prompt for the task's next turn",
          parameters: [idParam],
          requestBody: body('SendTaskPromptRequest'),
          responses: { 200: ok('the task', ref('Task')), 400: error('`invalid_request`'), 401: unauthorized, 403: forbidden, 404: error('`not_found`'), 409: error('`invalid_state`: completed') },
        },
      },
      '/api/tasks/{id}/budget': {
        post: {
          summary: "Add to the task's budget of all its turns (its running turn's tree too; a turn paused for budget resumes), or set it between turns",
          parameters: [idParam],
          requestBody: body('TaskBudgetRequest'),
          responses: {
            200: ok('the task, with `resumed`: the jobs the top-up resumed from a pause for budget', ref('TaskBudgetResult')),
            400: error('`invalid_request` (names `addUsd` or `budgetUsd`; over the $100,000 cap)'),
            401: unauthorized,
            403: forbidden,
            404: error('`not_found`'),
            409: error('`no_budget`: addUsd for a task without a budget; `invalid_state`: budgetUsd while a turn runs'),
          },
        },
      },
      '/api/tasks/{id}/suspend': action('Suspend: no wakes until resumed'),
      '/api/tasks/{id}/resume': action('Resume a suspended, workspace_lost or completed task'),
      '/api/tasks/{id}/stop': action("Cancel the current turn's job only"),
      '/api/tasks/{id}/complete': action('Complete: keys released, its job cancelled'),
      '/api/receivers': {
        get: { summary: 'List receivers (no secrets)', responses: { 200: ok('receivers', ref('ReceiverList')), 401: unauthorized } },
        post: {
          summary: 'Create a receiver; the reply holds its secret, shown once',
          requestBody: body('CreateReceiverRequest'),
          responses: { 201: ok('the receiver and its secret', ref('CreatedReceiver')), 400: error('`invalid_json` or `invalid_request`'), 401: unauthorized, 403: forbidden, 404: error('`unknown_task` or `unknown_agent`'), 409: error('`name_taken`'), 422: error('`invalid_request`: keyExpr/summaryExpr is not valid CEL, or a generic receiver has no keyExpr; `invalid_input`: the assign agent cannot run tasks (inputSchema refuses taskPrompt, taskId, taskTurn)') },
        },
      },
      '/api/receivers/{id}': {
        get: { summary: 'One receiver', parameters: [idParam], responses: { 200: ok('the receiver', ref('Receiver')), 401: unauthorized, 404: error('`not_found`') } },
        delete: { summary: 'Delete a receiver', parameters: [idParam], responses: { 204: { description: 'deleted' }, 401: unauthorized, 403: forbidden, 404: error('`not_found`') } },
      },
      '/hooks/github/{receiver}': hook('GitHub', 'X-Hub-Signature-256: sha256=<hex HMAC-SHA256>'),
      '/hooks/gitea/{receiver}': hook('Gitea or Forgejo', 'X-Gitea-Signature: <hex HMAC-SHA256>'),
      '/hooks/generic/{receiver}': hook('any JSON sender', 'Authorization: Bearer <token> or X-Signature-256: sha256=<hex>'),
    },
  };
}
