// The clock floor: a clock running behind the build or its data would lower the UA version
// ceilings below versions that already shipped: they are held at that date (here and, through
// LookupServer's versionFloorMs, in every lookup thread), and the operator is told.
import { log } from '../base/log.ts';
import { knownCurrentMs } from '../ops/version.ts';
import { setVersionFloor } from '../signals/ua-analysis.ts';

/** Sets the floor on the main thread and returns it (ms) for the threads and /metrics. */
export function holdClockFloor(): number {
  const knownCurrent = knownCurrentMs();
  setVersionFloor(knownCurrent);
  if (Date.now() < knownCurrent - 60_000) {
    log.warn(
      { clock: new Date().toISOString(), buildOrData: new Date(knownCurrent).toISOString() },
      'the system clock reads earlier than this build or its embedded data: fix the clock (NTP); UA version checks hold at the build date meanwhile (ivtd_clock_behind_seconds)',
    );
  }
  return knownCurrent;
}
