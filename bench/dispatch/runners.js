// Worker thread of bench/dispatch.bench.js: the throughput loop's simulated runners, out of the
// server's thread (real runners are other processes on other machines; here they would otherwise
// take the server's event loop and CPU). workerData: { url, runners: [{ credential, name }], jobs }.
// On 'go', connects every runner (hello) and posts 'connected'; then answers each `job.assign`
// at once with one `job.events` frame (harness.started + job.finished), as the in-process
// runners did. On 'stop', closes the sockets and posts 'stopped'. It counts the assignments it
// got: `connected` carries the count so far; once it reaches workerData.warm it posts
// `{ type: 'warm' }` (the measured window starts: the server's code is warm, as a long-running
// server's is), and once it reaches workerData.jobs `{ type: 'allAssigned' }` (the moment the
// last job started: what graphile-worker's side counts,
// its handler's start).
let assigned = 0;
import { parentPort, workerData } from 'node:worker_threads';
import WebSocket from 'ws';

// Cheap by design, like wrk (and bench/webhooks/load.js): a frame is parsed only when it is
// not a job.assign; an assignment's job id and attempt are read with a regex on its text, and
// the answer is a template with a timestamp refreshed every 50 ms. (JSON parse + stringify and
// two Date objects per job cost this thread more CPU than the server spent on the job.)
let now = new Date().toISOString();
setInterval(() => (now = new Date().toISOString()), 50).unref();
const ASSIGN = /^\{"type":"job\.assign","assignment":\{/;
const JOB_ID = /"jobId":(\d+)/;
const ATTEMPT = /"attempt":(\d+)/;
const finished = (jobId, attempt) =>
  `{"type":"job.events","jobId":${jobId},"attempt":${attempt},"events":[{"rseq":1,"at":"${now}","type":"harness.started","data":{"harness":"command","pid":1}},{"rseq":2,"at":"${now}","type":"job.finished","data":{"status":"succeeded"}}]}`;

/** One runner's socket: resolves once the server's `welcome` arrived. */
function connect(url, credential, name) {
  return new Promise((resolve, reject) => {
    let checked = false;
    const ws = new WebSocket(url.replace(/^http/, 'ws') + '/api/runners/connect', { headers: { authorization: `Bearer ${credential}` }, perMessageDeflate: false });
    ws.on('error', reject);
    ws.on('open', () => ws.send(JSON.stringify({ type: 'hello', name, labels: {}, capacity: 1, version: 'bench', running: [] })));
    ws.on('message', (data) => {
      const text = data.toString();
      if (ASSIGN.test(text)) {
        // the assignment's own jobId and attempt come before its nested objects (checked
        // against a real parse on each runner's first assignment)
        const jobId = JOB_ID.exec(text)[1];
        const attempt = ATTEMPT.exec(text)[1];
        if (!checked) {
          checked = true;
          const a = JSON.parse(text).assignment;
          if (String(a.jobId) !== jobId || String(a.attempt) !== attempt) throw new Error('bench/dispatch/runners.js: the regexes misread an assignment');
        }
        ws.send(finished(jobId, attempt));
        ++assigned;
        if (assigned === workerData.warm) parentPort.postMessage({ type: 'warm', assigned });
        if (assigned === workerData.jobs) parentPort.postMessage({ type: 'allAssigned' });
        return;
      }
      const f = JSON.parse(text);
      if (f.type === 'welcome') return resolve(ws);
      if (f.type === 'job.assign') throw new Error(`bench/dispatch/runners.js: an assignment not in the expected shape: ${text.slice(0, 200)}`);
    });
  });
}

let sockets = [];
parentPort.on('message', async (m) => {
  if (m === 'go') {
    sockets = await Promise.all(workerData.runners.map((r) => connect(workerData.url, r.credential, r.name)));
    parentPort.postMessage({ type: 'connected', assigned });
  } else if (m === 'stop') {
    for (const s of sockets) s.terminate();
    parentPort.postMessage('stopped');
  }
});
