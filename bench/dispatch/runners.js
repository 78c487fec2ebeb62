// Worker thread of bench/dispatch.bench.js: the throughput loop's simulated runners, out of the
// server's thread (real runners are other processes on other machines; here they would otherwise
// take the server's event loop and CPU). workerData: { url, runners: [{ credential, name }] }.
// On 'go', connects every runner (hello) and posts 'connected'; then answers each `job.assign`
// at once with one `job.events` frame (harness.started + job.finished), as the in-process
// runners did. On 'stop', closes the sockets and posts 'stopped'.
import { parentPort, workerData } from 'node:worker_threads';
import WebSocket from 'ws';

const at = () => new Date().toISOString();

/** One runner's socket: resolves once the server's `welcome` arrived. */
function connect(url, credential, name) {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url.replace(/^http/, 'ws') + '/api/runners/connect', { headers: { authorization: `Bearer ${credential}` }, perMessageDeflate: false });
    ws.on('error', reject);
    ws.on('open', () => ws.send(JSON.stringify({ type: 'hello', name, labels: {}, capacity: 1, version: 'bench', running: [] })));
    ws.on('message', (data) => {
      const f = JSON.parse(data.toString());
      if (f.type === 'welcome') return resolve(ws);
      if (f.type !== 'job.assign') return;
      const a = f.assignment;
      ws.send(
        JSON.stringify({
          type: 'job.events',
          jobId: a.jobId,
          attempt: a.attempt,
          events: [
            { rseq: 1, at: at(), type: 'harness.started', data: { harness: 'command', pid: 1 } },
            { rseq: 2, at: at(), type: 'job.finished', data: { status: 'succeeded' } },
          ],
        }),
      );
    });
  });
}

let sockets = [];
parentPort.on('message', async (m) => {
  if (m === 'go') {
    sockets = await Promise.all(workerData.runners.map((r) => connect(workerData.url, r.credential, r.name)));
    parentPort.postMessage('connected');
  } else if (m === 'stop') {
    for (const s of sockets) s.terminate();
    parentPort.postMessage('stopped');
  }
});
