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

const DURATION_UNIT_MS: Readonly<Record<string, number>> = { s: SECOND_MS, m: MINUTE_MS, h: HOUR_MS, d: DAY_MS };

/** `90`, `90s`, `30m`, `6h`, `7d` → milliseconds (a bare number is seconds); null when not a duration. */
export function parseDuration(text: string): number | null {
  const m = /^(\d{1,9})([smhd]?)$/.exec(text.trim().toLowerCase());
  if (!m) return null;
  return Number(m[1]) * DURATION_UNIT_MS[m[2] || 's']!;
}

/** Milliseconds as the largest whole unit: 21600000 → `6h`. */
export function formatDuration(ms: number): string {
  for (const [unit, size] of [['d', DAY_MS], ['h', HOUR_MS], ['m', MINUTE_MS]] as const) {
    if (ms >= size && ms % size === 0) return `${ms / size}${unit}`;
  }
  return `${Math.round(ms / SECOND_MS)}s`;
}
