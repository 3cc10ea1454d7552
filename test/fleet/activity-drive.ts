// Drives bots and users against the hosts of a fleet (test/fleet/activity.test.ts and
// bench/fleet-activity.ts): each actor sends its lookups at a fixed rate, to one host or
// round-robin over several, and every answer's band and second is kept.
import { withParams, type LookupAnswer } from '../reporting/client.ts';

export interface Host {
  name: string;
  prebid: string;
}

export interface Creds {
  partner_id: string;
  prebid_key: string;
}

export interface Actor {
  name: string;
  /** The hosts it goes to, in turn. */
  hosts: Host[];
  /** Lookups a second. */
  rate: number;
  /** The query of its i-th lookup. */
  query(i: number): string;
}

export interface Answer {
  /** Seconds since the actor's start (at sending). */
  at: number;
  host: string;
  band: string;
  ipBotActivity: boolean;
  status: number;
}

export async function lookupOn(host: Host, c: Creds, query: string): Promise<{ status: number; answer?: LookupAnswer }> {
  const q = withParams(query.replace('{p}', c.partner_id).replace('{k}', c.prebid_key), { node: host.name });
  const res = await fetch(`${host.prebid}/api/v1/ivt/lookup?${q}`);
  const text = await res.text();
  return res.status === 200 ? { status: 200, answer: JSON.parse(text) as LookupAnswer } : { status: res.status };
}

/**
 * Runs the actors together for `seconds` (each on its own schedule from one start) and
 * returns every answer per actor. `at(sec)` hooks run once when that second is reached.
 */
export async function drive(c: Creds, actors: Actor[], seconds: number, at: Record<number, () => Promise<void> | void> = {}): Promise<Map<string, Answer[]>> {
  const out = new Map<string, Answer[]>(actors.map((a) => [a.name, []]));
  const t0 = performance.now();
  const pending: Promise<void>[] = [];
  const hooks = Object.entries(at).map(([s, f]) => ({ s: Number(s), f, done: false }));
  const sent = new Map<string, number>(actors.map((a) => [a.name, 0]));
  for (;;) {
    const el = (performance.now() - t0) / 1000;
    if (el >= seconds) break;
    for (const h of hooks) {
      if (!h.done && el >= h.s) {
        h.done = true;
        pending.push(Promise.resolve(h.f()));
      }
    }
    for (const a of actors) {
      const due = Math.floor(el * a.rate) + 1;
      let i = sent.get(a.name)!;
      while (i < due) {
        const host = a.hosts[i % a.hosts.length]!;
        const when = el;
        const q = a.query(i);
        pending.push(
          lookupOn(host, c, q).then(
            (r) => void out.get(a.name)!.push({ at: when, host: host.name, band: r.answer?.botRisk.band ?? '', ipBotActivity: r.answer?.ipReputation.ipBotActivity ?? false, status: r.status }),
            () => void out.get(a.name)!.push({ at: when, host: host.name, band: '', ipBotActivity: false, status: 0 }),
          ),
        );
        i++;
      }
      sent.set(a.name, i);
    }
    await new Promise((r) => setTimeout(r, 5));
  }
  await Promise.all(pending);
  for (const list of out.values()) list.sort((x, y) => x.at - y.at);
  return out;
}

/** Share of answers `high`, and the second of the first `high` from which every later answer is high (Infinity: none). */
export function summary(answers: readonly Answer[]): { share: number; firstHigh: number; steadyFrom: number; n: number } {
  const n = answers.length;
  const high = answers.filter((a) => a.band === 'high').length;
  const first = answers.find((a) => a.band === 'high');
  let steady = Infinity;
  for (let i = n - 1; i >= 0; i--) {
    if (answers[i]!.band !== 'high') break;
    steady = answers[i]!.at;
  }
  return { share: n === 0 ? 0 : high / n, firstHigh: first ? first.at : Infinity, steadyFrom: steady, n };
}
