// Structured JSON logs on stdout, one line per event (never per lookup).
import pino from 'pino';

export const log = pino({
  level: process.env.IVTD_LOG_LEVEL || 'info',
  base: { pid: process.pid },
  timestamp: pino.stdTimeFunctions.isoTime,
});
export type Logger = typeof log;
