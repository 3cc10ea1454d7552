// A clock running behind must not turn current browsers into "impossible versions": the
// ceilings never fall below the date the build and its embedded data prove, and the
// operator sees how far behind the clock is (log line, ivtd_clock_behind_seconds).
import t from 'tap';
import { setVersionFloor, UaAnalyzer, versionCeilings } from '../../src/signals/ua-analysis.ts';
import { knownCurrentMs, type VersionInfo } from '../../src/ops/version.ts';
import { loadBundle } from '../../src/data/bundle.ts';
import { ServiceMetrics } from '../../src/ops/metrics.ts';

const YEAR = 365 * 86_400_000;
const now = Date.now();
// A Chrome as current as it gets today (the ceiling keeps 8 majors of margin above stable).
const major = versionCeilings(now).chrome - 8;
const ua = `Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/${major}.0.0.0 Safari/537.36`;

t.test('a year behind: current Chrome is impossible without a floor, fine with one', async (t) => {
  t.teardown(() => setVersionFloor(0));
  const behind = new UaAnalyzer({ now: now - YEAR });
  setVersionFloor(0);
  t.equal(behind.analyze(ua).malformedReason, 'impossible_version', 'what happened before: GIVT from the clock alone');
  setVersionFloor(now);
  const held = new UaAnalyzer({ now: now - YEAR });
  t.equal(held.analyze(ua).malformed, false, 'the ceilings hold at the floor');
  t.equal(new UaAnalyzer({ now: now - YEAR }).analyze(ua.replace(`Chrome/${major}`, `Chrome/${major + 40}`)).malformedReason, 'impossible_version', 'a version far past the floor is still impossible');
});

t.test('knownCurrentMs: the latest of the build date, the ASN table and the country database', async (t) => {
  const v = (builtAt: string, asn: string | null, country: string | null): VersionInfo => ({
    version: '0', builtAt, node: 'v20',
    data: {
      asn: asn ? { builtAt: asn, source: 'x', ranges: 1 } : null,
      countryMmdb: country ? { package: 'p', version: country } : null,
      sellers: { files: 0, records: 0 },
      botLists: null,
    },
  });
  t.equal(knownCurrentMs(v('dev', null, '2.3.2026061719')), Date.UTC(2026, 5, 17), 'the country package version carries its date');
  t.equal(knownCurrentMs(v('2026-09-01T10:00:00Z', '2026-07-01T00:00:00Z', '2.3.2026061719')), Date.UTC(2026, 8, 1, 10), 'the build date when it is the latest');
  t.equal(knownCurrentMs(v('dev', null, null)), 0, 'nothing known: no floor');
});

t.test('ivtd_clock_behind_seconds says how far behind the clock is', async (t) => {
  const bundle = loadBundle({ dataDir: '/nonexistent', mmdbCountry: undefined, mmdbAsn: undefined, mmdbAnonymousIp: undefined });
  const gauge = async (knownCurrent: number) => {
    const m = new ServiceMetrics({ threads: 1, bundle: () => bundle, keysLoaded: () => 0, knownCurrentMs: knownCurrent });
    const text = await m.registry.metrics();
    return Number(/^ivtd_clock_behind_seconds (\S+)/m.exec(text)?.[1]);
  };
  t.equal(await gauge(Date.now() - 1000), 0, 'a clock at or past the build: 0');
  const behind = await gauge(Date.now() + 3_600_000);
  t.ok(behind > 3590 && behind <= 3600, `an hour behind: ${behind}`);
});
