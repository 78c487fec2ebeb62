import { z } from 'zod';

/**
 * An amount of money as people type it, in USD: at least $0.000001 (1 micro-dollar, the unit
 * the store keeps money in; a smaller amount would round to 0 µ$, which for a child's
 * `budgetUsd` would even mean "no limit of its own") and at most $100,000.
 */
export const UsdAmount = z.number().min(0.000001, 'must be at least 0.000001 (one micro-dollar)').max(100_000);

/** The most a job tree's budget may be, USD: a budget, and a budget after top-ups, is at most this. */
export const MAX_BUDGET_USD = 100_000;
export type UsdAmount = z.infer<typeof UsdAmount>;
