// The fleet's bot-heavy IPs as the lookup threads consult them (issue 10; the ClickHouse
// side is src/fleet/bot-ips.ts): a fixed-size set of IP keys in shared memory, keyed the
// way history keys IPs (address, IPv6 by /64). Double-buffered: the main thread fills the
// half nobody reads and then switches, so a lookup never sees a half-built set.

/** Slots per half: four times the most IPs the fleet set holds (src/fleet/bot-ips.ts fleetMax). */
export const FLEET_BOT_IP_SLOTS = 1 << 16;
const WORDS = 2;

export interface FleetBotIpMemory {
  /** [0]: the half in use; [1]: IPs in it. */
  readonly control: SharedArrayBuffer;
  readonly keys: SharedArrayBuffer;
}

export function allocateFleetBotIps(): FleetBotIpMemory {
  return { control: new SharedArrayBuffer(8), keys: new SharedArrayBuffer(2 * FLEET_BOT_IP_SLOTS * WORDS * 4) };
}

/** Bytes behind the set (fixed). */
export const FLEET_BOT_IP_BYTES = 8 + 2 * FLEET_BOT_IP_SLOTS * WORDS * 4;

export class FleetBotIps {
  private readonly control: Int32Array;
  private readonly keys: Uint32Array;

  constructor(memory: FleetBotIpMemory) {
    this.control = new Int32Array(memory.control);
    this.keys = new Uint32Array(memory.keys);
  }

  get size(): number {
    return Atomics.load(this.control, 1);
  }

  /** Is the IP with history key (hi, lo) in the fleet's set? */
  has(hi: number, lo: number): boolean {
    if (Atomics.load(this.control, 1) === 0) return false;
    const base = Atomics.load(this.control, 0) * FLEET_BOT_IP_SLOTS;
    const k = this.keys;
    for (let i = 0, s = lo & (FLEET_BOT_IP_SLOTS - 1); i < FLEET_BOT_IP_SLOTS; i++, s = (s + 1) & (FLEET_BOT_IP_SLOTS - 1)) {
      const at = (base + s) * WORDS;
      const h = k[at]!;
      if (h === 0) return false;
      if (h === hi && k[at + 1] === lo) return true;
    }
    return false;
  }

  /** Main thread: the set becomes exactly these keys (at most a quarter of the slots are used). */
  replace(list: ReadonlyArray<readonly [number, number]>): void {
    const next = 1 - Atomics.load(this.control, 0);
    const base = next * FLEET_BOT_IP_SLOTS;
    const k = this.keys;
    k.fill(0, base * WORDS, (base + FLEET_BOT_IP_SLOTS) * WORDS);
    let n = 0;
    for (const [hi, lo] of list.slice(0, FLEET_BOT_IP_SLOTS / 4)) {
      for (let s = lo & (FLEET_BOT_IP_SLOTS - 1); ; s = (s + 1) & (FLEET_BOT_IP_SLOTS - 1)) {
        const at = (base + s) * WORDS;
        if (k[at] === hi && k[at + 1] === lo) break;
        if (k[at] === 0) {
          k[at] = hi;
          k[at + 1] = lo;
          n++;
          break;
        }
      }
    }
    Atomics.store(this.control, 0, next);
    Atomics.store(this.control, 1, n);
  }
}
