// A lookup thread's bot-heavy IPs of the moment, for the fleet's IP reputation
// (src/fleet/bot-ips.ts publishes them each minute). An IP enters on a lookup whose own
// evidence is invalid (outcomeForHistory: not history, so the fleet cannot confirm
// itself); once in, its lookups and invalid lookups are counted. Bounded: at most MAX_IPS
// per report interval; the IPs already in keep being counted when it is full.
import { ownString } from '../memory/own-string.ts';

/** One IP as a thread reports it (and a host publishes it). */
export interface BotIpRow {
  ip: string;
  lookups: number;
  invalid: number;
}

export const MAX_IPS = 2000;

export class BotIpTracker {
  private ips = new Map<string, BotIpRow>();

  note(ip: string, invalid: boolean): void {
    const e = this.ips.get(ip);
    if (e !== undefined) {
      e.lookups++;
      if (invalid) e.invalid++;
    } else if (invalid && this.ips.size < MAX_IPS) {
      const key = ownString(ip);
      this.ips.set(key, { ip: key, lookups: 1, invalid: 1 });
    }
  }

  take(): BotIpRow[] {
    if (this.ips.size === 0) return [];
    const rows = [...this.ips.values()];
    this.ips = new Map();
    return rows;
  }
}

/** Main thread: the threads' rows of one publication period, summed per IP (bounded). */
export class BotIpTally {
  private ips = new Map<string, BotIpRow>();

  add(rows: readonly BotIpRow[]): void {
    for (const r of rows) {
      const e = this.ips.get(r.ip);
      if (e !== undefined) {
        e.lookups += r.lookups;
        e.invalid += r.invalid;
      } else if (this.ips.size < 4 * MAX_IPS) {
        this.ips.set(r.ip, { ...r });
      }
    }
  }

  take(): BotIpRow[] {
    const rows = [...this.ips.values()];
    this.ips = new Map();
    return rows;
  }
}
