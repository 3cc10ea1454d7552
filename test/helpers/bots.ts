// Helpers of the crawler and monitor tests (test/signals/bot-services.test.ts,
// test/data/crawler-dns.test.ts): an engine over a data dir, an explained lookup, addresses
// and UAs taken from the embedded lists.
import { createHash } from 'node:crypto';
import { loadBundle } from '../../src/data/bundle.ts';
import { buildLookupData } from '../../src/prebid/lookup-data.ts';
import { planMemory } from '../../src/memory/budget.ts';
import { allocateLookupMemory } from '../../src/prebid/lookup-memory.ts';
import { LookupEngine } from '../../src/prebid/pipeline.ts';
import type { BotServiceSpec } from '../../src/signals/bot-services.ts';
import { formatIp } from '../../src/signals/ip-address.ts';
import { parseCidr } from '../../src/signals/ip-ranges.ts';
import { UaAnalyzer } from '../../src/signals/ua-analysis.ts';

const PARTNER = '6f1c2f9e-8a4b-4c7d-9e2f-1a2b3c4d5e6f';
/** A residential address (in no list: test/signals/bot-services.test.ts checks it). */
export const RESIDENTIAL = '81.2.69.142';
const analyzer = new UaAnalyzer();

export function engineOver(dir: string) {
  const data = buildLookupData(loadBundle({ dataDir: dir, mmdbCountry: undefined, mmdbAsn: undefined, mmdbAnonymousIp: undefined }), 1).data;
  const memory = allocateLookupMemory(planMemory(64, 1));
  const engine = new LookupEngine(data, memory);
  engine.keys.replace([{ customer_id: 'c1', partner_id: PARTNER, key_hash: createHash('sha256').update('key-1').digest('hex'), expires_at_ms: null }]);
  return { engine, data, memory };
}

let uid = 0;
export function explain(engine: LookupEngine, ip: string, ua: string) {
  const q = `p=${PARTNER}&k=key-1&node=n&pub=pub-1&sid=exchange1.example&dmn=news.example&adt=1&ip=${encodeURIComponent(ip)}&ua=${encodeURIComponent(ua)}&uid=u${uid++}&dvt=2`;
  const ex = engine.explain(q, Date.now());
  return { reasons: ex.reasons, category: ex.category, crawler: ex.signals?.crawler ?? null, band: (ex.response as { botRisk?: { band?: string } }).botRisk?.band };
}

/** An address inside a CIDR of the list (its first host where there is room). */
export function addressIn(cidr: string): string {
  const c = parseCidr(cidr);
  if (typeof c === 'string') throw new Error(c);
  if (c.v === 4) return formatIp({ v: 4, n: c.end > c.start ? c.start + 1 : c.start });
  const x = c.end > c.start ? c.start + 1n : c.start;
  const w = new Uint32Array(4);
  for (let k = 0; k < 4; k++) w[k] = Number((x >> BigInt(96 - 32 * k)) & 0xffffffffn);
  return formatIp({ v: 6, w });
}

/** A UA naming the service: the first of its patterns isbot calls a bot, in a crawler's usual form; '' when none is. */
export function uaOf(spec: Pick<BotServiceSpec, 'uaPatterns'>): string {
  for (const p of spec.uaPatterns) {
    const token = p.replace(/^\*+|\*+$/g, '');
    if (/[*?]/.test(token)) continue;
    for (const ua of [`Mozilla/5.0 (compatible; ${token}/1.0; +https://example.com/bot)`, `${token}/1.0`]) if (analyzer.analyze(ua).declaredBot) return ua;
  }
  return '';
}

