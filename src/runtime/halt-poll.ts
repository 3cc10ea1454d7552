// A KVM guest whose idle vCPUs halt at once (Linux's cpuidle-haltpoll driver and governor
// with guest_halt_poll_ns at 0) makes ivtd pay for waking its clients: an answer that reaches a
// client sleeping on another vCPU sends an interrupt from inside ivtd's `send`, and on such
// a guest that costs the lookup thread about 12 µs (measured on the development VM; the
// figures are in docs/operations.md, "On a virtual machine"). Guest halt-polling (the
// kernel's default of 200 µs) has the idle vCPU poll before it halts, and the wake-up costs
// next to nothing. It is the host's setting, not ivtd's: serve only says so at start.
import { readFileSync } from 'node:fs';

export const CPUIDLE_DRIVER = '/sys/devices/system/cpu/cpuidle/current_driver';
/** guest_halt_poll_ns is the haltpoll governor's: under another governor (menu, ladder) it does nothing. */
export const CPUIDLE_GOVERNOR = '/sys/devices/system/cpu/cpuidle/current_governor';
export const HALT_POLL_NS = '/sys/module/haltpoll/parameters/guest_halt_poll_ns';

/** A file's text, or null when it cannot be read (not Linux, not a KVM guest, no such module). */
export type ReadText = (path: string) => string | null;

const readText: ReadText = (path) => {
  try {
    return readFileSync(path, 'utf8');
  } catch {
    return null;
  }
};

/**
 * Whether this host is a guest whose idle vCPUs halt without polling (the haltpoll cpuidle
 * driver and governor with guest_halt_poll_ns 0): the start-up log then says so. Other
 * drivers (bare metal, other hypervisors), other governors and a guest that polls: false.
 */
export function haltsWithoutPolling(read: ReadText = readText): boolean {
  return read(CPUIDLE_DRIVER)?.trim() === 'haltpoll' && read(CPUIDLE_GOVERNOR)?.trim() === 'haltpoll' && read(HALT_POLL_NS)?.trim() === '0';
}
