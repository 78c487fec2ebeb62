import { overHeldText, overSpentText } from '../budget-words.js';
import { usd } from '../format.js';

/**
 * Spent (and, once the budgets API reports it, reserved) against the tree's limit, all µ$.
 * Widths are fractions of the limit, capped at 100%. `bound`, when another budget on the job's
 * path has less room than this one (the API's `boundedBy`: a child's sub-limit under a tree
 * nearly spent), says what is really left and what bounds it, as `flotilla budget JOB` does: the
 * bar alone read as room the job did not have (fresh-user finding). `held`: room held for the
 * calls of jobs a top-up resumed that have not made them yet (the API's `heldMicros`), drawn
 * after the reserved part; when it and the calls in flight stand over the limit, the legend says
 * by how much (budget-words.ts overHeldText). `ownHeld`: on a job's own page, the room it holds
 * itself for the call a top-up resumed it for (the API's `ownHeldMicros`: not in `held`, its own
 * calls may use it), drawn after `held`: left unnamed it read as room its siblings had (fresh tester).
 * `left`: what the job may still spend (the API's `remainingMicros`: the least room on its path),
 * named after the limit as `flotilla budget` names it — unless `bound` or the over-held words say
 * it already (fresh tester: the page had no left figure the CLI led with).
 */
export function BudgetBar({ spent, reserved = 0, held = 0, ownHeld = 0, limit, left, bound }: { spent: number; reserved?: number; held?: number; ownHeld?: number; limit: number; left?: number; bound?: { left: number; by: string; byLimit: number } }) {
  const pct = (v: number) => `${limit > 0 ? Math.min(100, (v / limit) * 100) : 0}%`;
  const over = spent >= limit && limit > 0;
  // the job's own hold stands over the limit as others' do (a need priced again after a price rise: fresh tester)
  const overHeld = overHeldText({ limitMicros: limit, spentMicros: spent, reservedMicros: reserved, heldMicros: held + ownHeld });
  const overSpent = overSpentText({ limitMicros: limit, spentMicros: spent, reservedMicros: reserved });
  return (
    <div className="budget" data-testid="budget">
      <div className="track" role="meter" aria-valuemin={0} aria-valuemax={limit} aria-valuenow={spent} aria-label="budget">
        <div className={`spent ${over ? 'over' : ''}`} style={{ width: pct(spent) }} />
        {reserved > 0 && <div className="reserved" style={{ width: pct(reserved), left: pct(spent) }} />}
        {held > 0 && <div className="held" style={{ width: pct(held), left: pct(spent + reserved) }} />}
        {ownHeld > 0 && <div className="held own" style={{ width: pct(ownHeld), left: pct(spent + reserved + held) }} />}
      </div>
      <div className="legend">
        <span data-testid="spent">{usd(spent)}</span> spent{reserved > 0 && <> · {usd(reserved)} reserved</>}
        {held > 0 && (
          <span data-testid="budget-held">
            {' '}
            · {usd(held)} held for resumed jobs
          </span>
        )}
        {ownHeld > 0 && (
          <span data-testid="budget-own-held">
            {' '}
            · {usd(ownHeld)} held for this job’s own call (its own to spend)
          </span>
        )}{' '}
        · limit {usd(limit)}
        {left !== undefined && !bound && !overHeld && !overSpent && <span data-testid="budget-left"> · {usd(left)} left</span>}
        {overSpent && (
          <span className="warn" data-testid="budget-over">
            {' '}
            · {overSpent}
          </span>
        )}
        {overHeld && (
          <span className="warn" data-testid="budget-over-held">
            {' '}
            · {overHeld}
          </span>
        )}
        {bound && (
          <span className="warn" data-testid="budget-bound">
            {' '}
            · {usd(bound.left)} left: bounded by {bound.by} (limit {usd(bound.byLimit)})
          </span>
        )}
      </div>
    </div>
  );
}
