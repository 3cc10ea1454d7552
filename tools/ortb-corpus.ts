// Sends a corpus of OpenRTB bid requests written by others, unchanged, to POST
// /api/v1/ivt/ortb of an in-process server (fresh data dir, ephemeral ports) and counts the
// verdicts: every request with an `id` and a non-empty `imp` must get a 200. A developer's
// tool, not a test: the corpora are not in the repository (Prebid Server's adapter fixtures
// are thousands of files). docs/integrations.md says how it was run.
//   node --import tsx tools/ortb-corpus.ts CORPUS.json [--node n] [--show 10]
// CORPUS.json: {"<name>": <BidRequest>, …}, e.g. every `mockBidRequest` of Prebid Server's
// adapters/*/*test/**.json, keyed by file path.
import { readFileSync } from 'node:fs';
import { startTestServer } from '../test/helpers/server.ts';

const args = process.argv.slice(2);
const file = args.find((a) => !a.startsWith('--'));
if (file === undefined) {
  console.error('usage: node --import tsx tools/ortb-corpus.ts CORPUS.json [--node n] [--show 10]');
  process.exit(2);
}
const opt = (name: string, dflt: string) => {
  const i = args.indexOf(`--${name}`);
  return i >= 0 && args[i + 1] !== undefined ? args[i + 1]! : dflt;
};
const node = opt('node', 'corpus');
const show = Number(opt('show', '10'));

const corpus = JSON.parse(readFileSync(file, 'utf8')) as Record<string, unknown>;
const s = await startTestServer({ threads: 1 });
const url = `${s.prebid}/api/v1/ivt/ortb?p=${s.customer.partner_id}&k=${s.customer.prebid_key}&node=${encodeURIComponent(node)}`;
let verdicts = 0;
let specInvalid = 0;
const refused: string[] = [];
const missing = new Map<string, number>();
const unusable = new Map<string, number>();
try {
  for (const [name, bid] of Object.entries(corpus)) {
    const b = bid as { id?: unknown; imp?: unknown };
    // OpenRTB requires id (a string) and a non-empty imp: without them a 400 is the right answer.
    const valid = typeof b === 'object' && b !== null && typeof b.id === 'string' && b.id !== '' && Array.isArray(b.imp) && b.imp.length > 0;
    const r = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(bid) });
    const text = await r.text();
    if (!valid) {
      specInvalid++;
      if (r.status !== 400) refused.push(`${name}: not spec-valid, yet ${r.status} ${text.slice(0, 200)}`);
      continue;
    }
    if (r.status !== 200) {
      refused.push(`${name}: ${r.status} ${text.slice(0, 200)}`);
      continue;
    }
    verdicts++;
    const j = JSON.parse(text) as { missing: string[]; unusable?: { field: string }[] };
    for (const m of j.missing) missing.set(m, (missing.get(m) ?? 0) + 1);
    for (const u of j.unusable ?? []) unusable.set(u.field, (unusable.get(u.field) ?? 0) + 1);
  }
} finally {
  await s.stop();
}
const total = Object.keys(corpus).length;
console.log(`${total} bid requests: ${verdicts} verdicts of ${total - specInvalid} spec-valid ones; ${specInvalid} without id or imp (400 expected)`);
console.log(`refused or wrong: ${refused.length}`);
for (const line of refused.slice(0, show)) console.log(`  ${line}`);
const top = (m: Map<string, number>) => [...m].sort((a, b) => b[1] - a[1]).map(([k, n]) => `${k} ${n}`).join(', ');
console.log(`missing: ${top(missing)}`);
console.log(`unusable: ${top(unusable)}`);
process.exit(refused.length === 0 ? 0 : 1);
