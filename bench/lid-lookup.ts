// The lookup id's cost on a whole lookup, in process: the same LookupEngine lookups with
// and without the lid (an engine given no secret makes none), alternating rounds over the
// same queries on one thread; CPU time per lookup, medians. No HTTP: what the lid adds to
// the pipeline, not to the port (npm run bench:lookup measures the port).
//   node --import tsx bench/lid-lookup.ts [--rounds 5] [--lookups 200000]
import { randomBytes, randomUUID } from 'node:crypto';
import { loadBundle } from '../src/data/bundle.ts';
import { allocateLookupMemory } from '../src/prebid/lookup-memory.ts';
import { planMemory } from '../src/memory/budget.ts';
import { buildLookupData } from '../src/prebid/lookup-data.ts';
import { LookupEngine } from '../src/prebid/pipeline.ts';
import { hashKey } from '../src/base/secrets.ts';
import { lookupPaths } from './requests.ts';
import { numArg } from './processes.ts';

const ROUNDS = numArg('rounds', 5);
const LOOKUPS = numArg('lookups', 200_000);

const bundle = loadBundle({ dataDir: '/nonexistent', mmdbCountry: undefined, mmdbAsn: undefined, mmdbAnonymousIp: undefined });
const data = buildLookupData(bundle, 1).data;
const customerId = randomUUID();
const partnerId = randomUUID();
const key = 'bench-key-' + randomBytes(8).toString('hex');
const keys = [{ customer_id: customerId, partner_id: partnerId, key_hash: hashKey(key), expires_at_ms: null }];
const queries = lookupPaths(partnerId, key, 2000).map((p) => p.slice(p.indexOf('?') + 1));

function engine(lid: boolean): LookupEngine {
  const e = new LookupEngine(data, allocateLookupMemory(planMemory(256, 1)), lid ? { lidSecret: randomBytes(16) } : {});
  e.keys.replace(keys);
  return e;
}
const engines = { without: engine(false), with: engine(true) };

function cpuMs(): number {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1000;
}

function round(e: LookupEngine, n: number): number {
  let bad = 0;
  const t0 = cpuMs();
  for (let i = 0; i < n; i++) if (e.lookup(queries[i % queries.length]!, Date.now()).status !== 200) bad++;
  const ns = ((cpuMs() - t0) * 1e6) / n;
  if (bad > 0) throw new Error(`${bad} lookups not answered 200`);
  return ns;
}

round(engines.without, 20_000);
round(engines.with, 20_000);
const ns: Record<'without' | 'with', number[]> = { without: [], with: [] };
for (let r = 0; r < ROUNDS; r++) {
  for (const side of r % 2 ? (['with', 'without'] as const) : (['without', 'with'] as const)) ns[side].push(round(engines[side], LOOKUPS));
}
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const a = median(ns.without), b = median(ns.with);
console.log(JSON.stringify({ bench: 'lid-lookup', lookups: LOOKUPS, rounds: ROUNDS, without_ns: Math.round(a), with_ns: Math.round(b), lid_adds_ns: Math.round(b - a), rounds_ns: { without: ns.without.map(Math.round), with: ns.with.map(Math.round) } }));
