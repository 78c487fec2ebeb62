/**
 * A runner's command line without its registration token (`--token flr_...` or
 * `--token=flr_...`, `flotilla runner`'s option): what `ps` shows once the runner has registered
 * (process.title) and what a self-update starts again (reexec.ts). The token is single-use and
 * spent by then (the credential file in the work folder is what the runner uses from then on),
 * but a secret, used or not, does not belong in a process listing (issue 5; a fresh tester saw
 * it there after a self-update). A `--token` inside another option's value (after `--`) is
 * kept: only the option itself is dropped.
 * @param args the arguments after the executable (e.g. process.argv.slice(1)).
 * @returns a new array without `--token` and its value.
 */
export function withoutTokenArg(args: readonly string[]): string[] {
  const out: string[] = [];
  for (let i = 0; i < args.length; i++) {
    const a = args[i]!;
    if (a === '--') {
      out.push(...args.slice(i));
      break;
    }
    if (a === '--token') {
      i++; // and its value
      continue;
    }
    if (a.startsWith('--token=')) continue;
    out.push(a);
  }
  return out;
}
