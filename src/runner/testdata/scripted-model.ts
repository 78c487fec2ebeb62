// Test helper: a minimal Anthropic Messages endpoint that replays scripted assistant turns as
// SSE streams (enough for the real Claude Code CLI), chosen by the number of messages sent.
import type { IncomingMessage, ServerResponse } from 'node:http';

export type ScriptBlock = { type: 'text'; text: string } | { type: 'tool_use'; id: string; name: string; input: unknown };
export interface ScriptTurn {
  content: ScriptBlock[];
  usage: { input: number; output: number; cacheRead: number; cacheWrite: number };
}
export interface ModelRequest {
  headers: IncomingMessage['headers'];
  body: { model: string; messages: unknown[]; tools?: { name: string }[]; stream?: boolean };
}

/** Returns an HTTP handler for `POST /v1/messages` (turn = index of the request) and the requests seen. */
export function scriptedModel(turns: ScriptTurn[]): { handle: (req: IncomingMessage, res: ServerResponse) => boolean; requests: ModelRequest[] } {
  const requests: ModelRequest[] = [];
  const handle = (req: IncomingMessage, res: ServerResponse): boolean => {
    if (!req.url?.startsWith('/v1/messages')) {
      if (req.method === 'HEAD') {
        res.writeHead(404);
        res.end();
        return true;
      }
      return false;
    }
    let raw = '';
    req.on('data', (c: Buffer) => (raw += c.toString()));
    req.on('end', () => {
      const body = JSON.parse(raw) as ModelRequest['body'];
      requests.push({ headers: req.headers, body });
      const turn = turns[Math.min(requests.length - 1, turns.length - 1)] as ScriptTurn;
      const n = requests.length;
      const ev: object[] = [
        {
          type: 'message_start',
          message: {
            id: `msg_${n}`, type: 'message', role: 'assistant', model: body.model, content: [], stop_reason: null,
            usage: { input_tokens: turn.usage.input, output_tokens: 1, cache_read_input_tokens: turn.usage.cacheRead, cache_creation_input_tokens: turn.usage.cacheWrite },
          },
        },
      ];
      turn.content.forEach((c, i) => {
        if (c.type === 'text') {
          ev.push({ type: 'content_block_start', index: i, content_block: { type: 'text', text: '' } });
          ev.push({ type: 'content_block_delta', index: i, delta: { type: 'text_delta', text: c.text } });
        } else {
          ev.push({ type: 'content_block_start', index: i, content_block: { type: 'tool_use', id: c.id, name: c.name, input: {} } });
          ev.push({ type: 'content_block_delta', index: i, delta: { type: 'input_json_delta', partial_json: JSON.stringify(c.input) } });
        }
        ev.push({ type: 'content_block_stop', index: i });
      });
      const stop = turn.content.some((c) => c.type === 'tool_use') ? 'tool_use' : 'end_turn';
      ev.push({ type: 'message_delta', delta: { stop_reason: stop, stop_sequence: null }, usage: { output_tokens: turn.usage.output } });
      ev.push({ type: 'message_stop' });
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      for (const e of ev) res.write(`event: ${(e as { type: string }).type}\ndata: ${JSON.stringify(e)}\n\n`);
      res.end();
    });
    return true;
  };
  return { handle, requests };
}
