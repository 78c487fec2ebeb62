import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { runStoreConformance } from './conformance.js';
import { openStore } from './open.js';

const dirs: string[] = [];

runStoreConformance(
  'store conformance: SQLite',
  async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'flotilla-store-'));
    dirs.push(dir);
    return openStore({ dataDir: path.join(dir, 'data') });
  },
  {
    cleanup: async () => {
      for (const d of dirs.splice(0)) fs.rmSync(d, { recursive: true, force: true });
    },
  },
);
