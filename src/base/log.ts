// Structured JSON logs on stdout, one line per event (never per lookup).
import pino from 'pino';

/** The levels --log-level takes: pino's, most severe first, and silent. */
export const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;

function isLogLevel(v: string | undefined): v is (typeof LOG_LEVELS)[number] {
  return (LOG_LEVELS as readonly string[]).includes(v ?? '');
}

// Read before the config is: an unknown IVTD_LOG_LEVEL starts at info here, and the
// config (src/base/config.ts) refuses it with a message, rather than every command failing
// while it loads.
const fromEnv = process.env.IVTD_LOG_LEVEL;

export const log = pino({
  level: isLogLevel(fromEnv) ? fromEnv : 'info',
  base: { pid: process.pid },
  timestamp: pino.stdTimeFunctions.isoTime,
});
export type Logger = typeof log;
