import { Worker } from 'node:worker_threads';
import vm from 'node:vm';
import { parse } from '@marcbachmann/cel-js';
const p = parse('payload.groupKey');
const vars = { payload: { groupKey: '{}:{alertname="DiskFull"}', status: 'firing', alerts: [{ labels: { alertname: 'DiskFull' } }] }, headers: { 'content-type': 'application/json' } };
const N = 5000;
let t = performance.now(); for (let i = 0; i < N; i++) p(vars); const inline = (performance.now() - t) / N * 1000;
const ctx = vm.createContext({ run: null }); const s = new vm.Script('run()');
t = performance.now(); for (let i = 0; i < N; i++) { ctx.run = () => p(vars); s.runInContext(ctx, { timeout: 50 }); } const viaVm = (performance.now() - t) / N * 1000;
const w = new Worker(`const {parentPort}=require('node:worker_threads'); parentPort.on('message', (m) => parentPort.postMessage(m.payload.groupKey));`, { eval: true });
const once = (m) => new Promise((r) => { w.once('message', r); w.postMessage(m); });
for (let i = 0; i < 200; i++) await once(vars);
t = performance.now(); for (let i = 0; i < N; i++) await once(vars); const viaWorker = (performance.now() - t) / N * 1000;
// worker CPU on the main thread: serialize cost only approximated by structuredClone
t = performance.now(); for (let i = 0; i < N; i++) structuredClone(vars); const clone = (performance.now() - t) / N * 1000;
console.log(JSON.stringify({ inlineUs: +inline.toFixed(2), vmTimeoutUs: +viaVm.toFixed(1), workerRoundTripUs: +viaWorker.toFixed(1), cloneUs: +clone.toFixed(2) }));
await w.terminate();
