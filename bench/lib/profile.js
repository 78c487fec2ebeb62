// BENCH_PROFILE=DIR: a CPU profile of the calling thread (the server's, in the benchmarks that
// run it in-process) over one phase only, not the warm-up and baselines around it, written to
// DIR/<name>.cpuprofile (open it in Chrome DevTools or read it with any .cpuprofile tool).
// Sampled every BENCH_PROFILE_INTERVAL_US µs (default 100; V8's own default, ~1 ms, gives too few
// samples to tell apart the µs-sized parts of a gateway call).
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Session } from 'node:inspector/promises';

/** Starts the profiler when BENCH_PROFILE is set; `stop(name)` writes the profile. Null when unset. */
export async function startProfile() {
  const dir = process.env.BENCH_PROFILE;
  if (!dir) return null;
  const session = new Session();
  session.connect();
  await session.post('Profiler.enable');
  await session.post('Profiler.setSamplingInterval', { interval: Number(process.env.BENCH_PROFILE_INTERVAL_US ?? 100) });
  await session.post('Profiler.start');
  return {
    stop: async (name) => {
      const { profile } = await session.post('Profiler.stop');
      mkdirSync(dir, { recursive: true });
      writeFileSync(join(dir, `${name}.cpuprofile`), JSON.stringify(profile));
      session.disconnect();
    },
  };
}
