import type { HubOptions } from './hub.js';

/**
 * The name a `hello` leaves runner `id` with (hub.ts): `current` when it asks for none (a
 * runner started again without `--name`); `asked` when it is `current` or no other
 * runner that is not revoked has it (the runner is renamed), else `current` with a warning
 * logged (core/runner-names.ts: names are unique among runners that are not revoked; the
 * connection stays, and the `welcome` tells the runner the name in effect).
 */
export async function helloName(o: Pick<HubOptions, 'store' | 'log'>, id: number, current: string, asked: string | undefined): Promise<string> {
  if (asked === undefined || asked === current) return current;
  const r = await o.store.renameRunner(id, asked);
  if (r.renamed) return asked;
  if (r.reason === 'taken') o.log.warn('runner keeps its name: the one its hello asks for belongs to another runner', { runnerId: id, name: current, asked, takenBy: r.takenBy });
  return current;
}
