// The SQLite writer thread (sqlite-writer.ts): its own connection to the store's file, on which
// it runs the gateway's reserves and settles (sqlite-budget-units.ts) that the event loop sends
// it, one batch per message, each batch one transaction, under the write lock it shares with the
// event loop's connection (thread-write-lock.ts). Answers each batch with one message.
import { parentPort, workerData } from 'node:worker_threads';
import BetterSqlite3 from 'better-sqlite3';
import { sqliteTreeRows } from './sqlite-tree-rows.js';
import { sqliteBudgetUnits } from './sqlite-budget-units.js';
import { FALLBACK_AUTOCHECKPOINT_PAGES } from './sqlite-checkpoint.js';
import { writerSide } from './thread-write-lock.js';
import type { WriterBatch, WriterError, WriterOutcome, WriterReply, WriterSetup } from './sqlite-writer-wire.js';

const setup = workerData as WriterSetup;
const port = parentPort!;
const lock = writerSide(setup.lock);
const sqlite = new BetterSqlite3(setup.file, { fileMustExist: true, timeout: setup.busyTimeoutMs });
sqlite.pragma('synchronous = NORMAL');
sqlite.pragma('foreign_keys = ON');
// Checkpoints are the checkpoint thread's (sqlite-checkpoint.ts); this is its backstop, as on the store's connection.
sqlite.pragma(`wal_autocheckpoint = ${FALLBACK_AUTOCHECKPOINT_PAGES}`);
const trees = sqliteTreeRows(sqlite);
const units = sqliteBudgetUnits(sqlite, trees);

const plain = (err: unknown): WriterError => {
  const e = err as { message?: unknown; code?: unknown; name?: unknown };
  return { message: String(e?.message ?? err), name: typeof e?.name === 'string' ? e.name : 'Error', code: typeof e?.code === 'string' ? e.code : undefined };
};

// As sqlite-group-commit.ts runs a batch: units in order, a unit that throws fails alone unless
// SQLite rolled the whole transaction back (then every unit of the batch gets the error).
const batch = sqlite.transaction((list: WriterBatch['units']): WriterOutcome[] => {
  trees.reset();
  const out: WriterOutcome[] = [];
  for (const u of list) {
    try {
      out.push({ ok: true, value: u.kind === 'reserve' ? units.reserve(u.rootId, u.worst, u.now, u.ttlMs, u.callJson) : units.settle(u.rootId, u.reservationId, u.cost, u.now, u.values) });
    } catch (err) {
      if (!sqlite.inTransaction) throw err;
      out.push({ ok: false, error: plain(err) });
    }
  }
  trees.flush();
  return out;
});

port.on('message', (msg: WriterBatch | 'close') => {
  if (msg === 'close') {
    sqlite.close();
    port.close();
    return;
  }
  let reply: WriterReply;
  try {
    lock.acquire(setup.busyTimeoutMs);
    try {
      reply = { id: msg.id, outcomes: batch.immediate(msg.units) };
    } finally {
      lock.release();
    }
  } catch (err) {
    reply = { id: msg.id, error: plain(err) };
  }
  port.postMessage(reply);
});
port.postMessage('ready');
