import * as fs from "node:fs";
import * as path from "node:path";
import { type Duration, Token } from "aws-cdk-lib";

/** One row of ranges.json: a prop, its SAM parameter and WAITER_* variable, and its bounds. */
export interface Range {
  readonly sam: string;
  readonly env: string | null;
  readonly min: number;
  /** null: no upper bound. */
  readonly max: number | null;
  /** "s": a Duration prop, counted in whole seconds. */
  readonly unit: "" | "s";
  /** The SAM parameter's value that means "none" (where the prop is simply left out). */
  readonly samNone?: number;
}

/** ranges.json, the one table of deploy-time ranges (its "_" entry says who else reads it). */
export const RANGES: Readonly<Record<string, Range>> = Object.fromEntries(
  Object.entries(JSON.parse(fs.readFileSync(path.join(import.meta.dirname, "ranges.json"), "utf8"))).filter(
    ([key]) => key !== "_",
  ),
) as Record<string, Range>;

/**
 * `value` (or `fallback` when absent) as the functions read it, a whole number (of seconds for a
 * Duration), or an error that names the prop and its range. Unresolved tokens pass unchecked.
 */
export function inRange(prop: string, value: number | Duration | undefined, fallback: number): number {
  const range = RANGES[prop];
  if (!range) {
    throw new Error(`SqsWaiter: no range for ${prop} in ranges.json`);
  }
  if (value === undefined) {
    return fallback;
  }
  const n = typeof value === "number" ? value : value.toSeconds({ integral: false });
  if (Token.isUnresolved(n)) {
    return n;
  }
  const what = range.unit === "s" ? "a whole number of seconds" : "a whole number";
  const bounds = range.max === null ? `at least ${range.min}` : `from ${range.min} to ${range.max}`;
  if (!Number.isInteger(n) || n < range.min || (range.max !== null && n > range.max)) {
    const none = range.samNone !== undefined ? `; leave it out for none (${n} would not mean none here)` : "";
    throw new Error(`SqsWaiter: ${prop} must be ${what} ${bounds}, got ${n}${none}`);
  }
  return n;
}
