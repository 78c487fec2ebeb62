import { realpath } from 'node:fs/promises';
import { isAbsolute, relative, resolve, sep } from 'node:path';

/**
 * Confinement of the files an agent definition reads (agent.yaml, its `prompt:` file,
 * `script.yaml`) to the repository or agents folder it comes from. Rule (fresh-user security
 * finding on `flotilla agents install`): a reference must be relative, and the file it names
 * must resolve — symlinks followed, `realpath` — inside the root; otherwise the file's content
 * could be stored and served as `promptText` (e.g. `/etc/shadow`, the admin token).
 */
export class AgentFileEscape extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'AgentFileEscape';
  }
}

/** True when `p` (absolute, resolved) is `root` or below it. */
function inside(root: string, p: string): boolean {
  const r = relative(root, p);
  return r === '' || (!r.startsWith('..' + sep) && r !== '..' && !isAbsolute(r));
}

/**
 * Resolves `ref` (as written in `field` of `file`; `field` null when `file` is the checked file
 * itself) against `folder` and checks it stays inside `root`. Returns the real path of the file, or null when it does not exist (the caller decides
 * whether a missing file is an error).
 * @throws AgentFileEscape `<file>: <field>: "<ref>" ...` (or `<file>: ...`) when `ref` is absolute, leads out of `root`
 *   with `..`, or is (or passes through) a symlink whose target is outside `root`.
 */
export async function confinedFile(root: string, folder: string, ref: string, file: string, field: string | null): Promise<string | null> {
  // `<file>: <field>: "<ref>"` for a reference written in a file, `<file>:` for the file itself.
  const what = field === null ? `${file}:` : `${file}: ${field}: ${JSON.stringify(ref)}`;
  if (isAbsolute(ref)) throw new AgentFileEscape(`${what} is an absolute path; files must be relative to the agent folder`);
  const realRoot = await realpath(root);
  const lexical = resolve(folder, ref);
  if (!inside(resolve(root), lexical) && !inside(realRoot, lexical)) throw new AgentFileEscape(`${what} points outside the agent repository`);
  let real: string;
  try {
    real = await realpath(lexical);
  } catch {
    return null;
  }
  if (!inside(realRoot, real)) throw new AgentFileEscape(`${what} is a symlink to a file outside the agent repository`);
  return real;
}
