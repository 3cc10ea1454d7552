// Time units shared by every part (reporting hours and days are UTC).
export const SECOND_MS = 1_000;
export const MINUTE_MS = 60_000;
export const HOUR_MS = 3_600_000;
export const DAY_MS = 86_400_000;

/** Start (ms, UTC) of the hour holding `ms`. */
export function hourStart(ms: number): number {
  return ms - (ms % HOUR_MS);
}

/** Start (ms, UTC) of the day holding `ms`. */
export function dayStart(ms: number): number {
  return ms - (ms % DAY_MS);
}
