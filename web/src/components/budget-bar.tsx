import { usd } from '../format.js';

/**
 * Spent (and, once the budgets API reports it, reserved) against the tree's limit, all µ$.
 * Widths are fractions of the limit, capped at 100%.
 */
export function BudgetBar({ spent, reserved = 0, limit }: { spent: number; reserved?: number; limit: number }) {
  const pct = (v: number) => `${limit > 0 ? Math.min(100, (v / limit) * 100) : 0}%`;
  const over = spent >= limit && limit > 0;
  return (
    <div className="budget" data-testid="budget">
      <div className="track" role="meter" aria-valuemin={0} aria-valuemax={limit} aria-valuenow={spent} aria-label="budget">
        <div className={`spent ${over ? 'over' : ''}`} style={{ width: pct(spent) }} />
        {reserved > 0 && <div className="reserved" style={{ width: pct(reserved), left: pct(spent) }} />}
      </div>
      <div className="legend">
        <span data-testid="spent">{usd(spent)}</span> spent{reserved > 0 && <> · {usd(reserved)} reserved</>} · limit {usd(limit)}
      </div>
    </div>
  );
}
