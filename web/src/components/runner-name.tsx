import { client, useApi } from '../api.js';
import { Link } from '../router.js';

/**
 * A runner by name, linked to its page: `box-a (#2)`, as the jobs list and `flotilla jobs show`
 * name it (the job and task pages showed a bare id: fresh-tester finding); `#2` while loading or
 * when the runner is gone; `—` for none.
 */
export function RunnerName({ id }: { id: number | null }) {
  const runner = useApi(() => (id === null ? Promise.resolve(null) : client.getRunner(id)), [id]);
  if (id === null) return <>—</>;
  const name = runner.data?.runner.name;
  return (
    <Link to={`/runners/${id}`}>
      <span data-testid="runner-name">{name ? `${name} (#${id})` : `#${id}`}</span>
    </Link>
  );
}
