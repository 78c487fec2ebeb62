// The SQLite writer thread (sqlite-writer.ts): its own connection to the store's file, on which
// it runs the gateway's reserves and settles (sqlite-budget-units.ts) that the event loop sends
// it, one batch per message, each batch one transaction, under the write lock it shares with the
// event loop's connection (thread-write-lock.ts). Answers each batch with one message.
// The thread runs no event loop of its own: it reads the port in a loop (below) until 'close'.
import { parentPort, receiveMessageOnPort, workerData } from 'node:worker_threads';
import BetterSqlite3 from 'better-sqlite3';
import { sqliteTreeRows } from './sqlite-tree-rows.js';
import { runBudgetUnit, sqliteBudgetUnits } from './sqlite-budget-units.js';
import { unitOutcomes } from './sqlite-group-commit.js';
import { FALLBACK_AUTOCHECKPOINT_PAGES } from './sqlite-checkpoint.js';
import { writerSide } from './thread-write-lock.js';
import { WRITER_SPIN_MS, writerSpin } from './writer-spin.js';
import { packOutcome, RING, SLEEPING, unpackUnit, type PackedOutcome, type WriterBatch, type WriterError, type WriterOutcome, type WriterReply, type WriterSetup } from './sqlite-writer-wire.js';

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

// As sqlite-group-commit.ts runs a batch (unitOutcomes): units in order, a unit that throws
// fails alone unless SQLite rolled the whole transaction back (then every unit of the batch gets the error).
const batch = sqlite.transaction((list: WriterBatch['units']): PackedOutcome[] =>
  unitOutcomes(sqlite, list.length, (i) => runBudgetUnit(units, unpackUnit(list[i]!)), { begin: trees.reset, end: trees.flush }).map((o) =>
    packOutcome(o.ok ? { ok: true, value: o.value as Extract<WriterOutcome, { ok: true }>['value'] } : { ok: false, error: plain(o.error) }),
  ),
);

const run = (msg: WriterBatch): void => {
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
};

// Batches come by the port, read here without this thread's event loop (receiveMessageOnPort).
// When none is waiting after a batch, the port is polled for WRITER_SPIN_MS while polling has
// lately caught batches (writer-spin.ts): a batch sent meanwhile is taken at once, and the event
// loop is spared waking a sleeping thread. Otherwise, or when the poll finds nothing, the thread
// sleeps on the doorbell until the event loop rings it (sqlite-writer.ts).
const bell = new Int32Array(setup.doorbell);
const spin = writerSpin();
const poll = (): WriterBatch | 'close' | undefined => receiveMessageOnPort(port)?.message as WriterBatch | 'close' | undefined;
const next = (): WriterBatch | 'close' => {
  let got = poll();
  if (got) return got;
  const t0 = performance.now();
  if (spin.worth()) {
    const until = t0 + WRITER_SPIN_MS;
    while (performance.now() < until) {
      got = poll();
      if (got) {
        spin.observe(performance.now() - t0);
        return got;
      }
    }
  }
  for (;;) {
    // Asleep from here: a batch sent before the flag was up finds it down and rings nothing, so
    // look once more; one sent after changes RING, and `wait` returns at once or is woken.
    const seen = Atomics.load(bell, RING);
    Atomics.store(bell, SLEEPING, 1);
    got = poll();
    if (!got) Atomics.wait(bell, RING, seen);
    Atomics.store(bell, SLEEPING, 0);
    got ??= poll();
    if (got) {
      spin.observe(performance.now() - t0);
      return got;
    }
  }
};

port.postMessage('ready');
for (let msg = next(); msg !== 'close'; msg = next()) run(msg);
sqlite.close();
port.close();
