// `ivtd policy …` as an operator runs it: on the store directly, and through a running
// server's control socket, where the change reaches the lookup threads before it returns.
import t from 'tap';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { runIvtd } from '../cli/run-cli.ts';
import { startTestServer } from '../helpers/server.ts';

const CHROME = 'Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0.0.0 Safari/537.36';

t.test('policy commands on the store, then through a running server', async (t) => {
  const dir = t.testdir();
  const made = await runIvtd(['customer', 'create', '--name', 'Acme', '--username', 'acme', '--password', 'long-enough-pw', '--json', '--data-dir', dir]);
  t.equal(made.code, 0, made.stderr);
  const csv = join(dir, 'list.csv');
  writeFileSync(csv, 'kind,action,value\r\nip,deny,192.0.2.0/24\r\nua_substring,allow,"PartnerBot, v2"\r\nseller,deny,Exchange.example:77\r\n');
  const imp = await runIvtd(['policy', 'import', '--customer', 'acme', '--file', csv, '--data-dir', dir]);
  t.equal(imp.code, 0, imp.stderr);
  t.match(imp.stdout, 'has 3 entries');
  const show = await runIvtd(['policy', 'show', '--customer', 'acme', '--json', '--data-dir', dir]);
  t.match(JSON.parse(show.stdout), { medium: null, entries: [{ kind: 'ip', value: '192.0.2.0/24', action: 'deny' }, { kind: 'seller', value: 'exchange.example:77' }, { kind: 'ua_substring', value: 'PartnerBot, v2', action: 'allow' }] });
  const exp = await runIvtd(['policy', 'export', '--customer', 'acme', '--data-dir', dir]);
  t.equal(exp.stdout, 'kind,action,value\r\nip,deny,192.0.2.0/24\r\nseller,deny,exchange.example:77\r\nua_substring,allow,"PartnerBot, v2"\r\n', 'export is what import reads');
  // --replace makes the file the whole list (it was refused as an unknown flag once).
  const replaceCsv = join(dir, 'replace.csv');
  writeFileSync(replaceCsv, 'kind,action,value\r\napp,deny,com.example.flashlight\r\n');
  const replaced = await runIvtd(['policy', 'import', '--customer', 'acme', '--file', replaceCsv, '--replace', '--json', '--data-dir', dir]);
  t.equal(replaced.code, 0, replaced.stderr);
  t.match(JSON.parse(replaced.stdout), { entries: 1 });
  const afterReplace = await runIvtd(['policy', 'export', '--customer', 'acme', '--data-dir', dir]);
  t.equal(afterReplace.stdout, 'kind,action,value\r\napp,deny,com.example.flashlight\r\n', '--replace left only the file\'s entries');
  t.equal((await runIvtd(['policy', 'import', '--customer', 'acme', '--file', csv, '--replace', '--data-dir', dir])).code, 0, 'and back');
  writeFileSync(csv, 'kind,action,value\r\nip,deny,192.0.2.1/24\r\n');
  const bad = await runIvtd(['policy', 'import', '--customer', 'acme', '--file', csv, '--data-dir', dir]);
  t.equal(bad.code, 2, 'a bad line is a usage error');
  t.match(bad.stderr, /--file line 2, column value: .*192\.0\.2\.0\/24/);
  // A fault of the CSV itself names its line once (it read "--file, line 2: line 2: …").
  for (const [text, said] of [
    ['kind,action,value\r\nip,deny,"192.0.2.1"x\r\n', 'ivtd: --file line 2: unexpected text after a quoted field.\n'],
    ['kind,value\r\n', 'ivtd: --file line 1 must be the header "kind,action,value" (columns in any order).\n'],
  ] as const) {
    writeFileSync(csv, text);
    const broken = await runIvtd(['policy', 'import', '--customer', 'acme', '--file', csv, '--data-dir', dir]);
    t.equal(broken.code, 2, `${JSON.stringify(text)}: a usage error`);
    t.equal(broken.stderr.split('\n')[0] + '\n', said, 'where, said once');
  }
  const setFile = join(dir, 'policy.json');
  writeFileSync(setFile, JSON.stringify({ high: 0.8, entries: [{ kind: 'publisher', value: 'pub-x', action: 'deny' }] }));
  const set = await runIvtd(['policy', 'set', '--customer', 'acme', '--file', setFile, '--data-dir', dir]);
  t.equal(set.code, 0, set.stderr);
  writeFileSync(setFile, JSON.stringify({ high: 2 }));
  const badSet = await runIvtd(['policy', 'set', '--customer', 'acme', '--file', setFile, '--data-dir', dir]);
  t.equal(badSet.code, 2);
  t.match(badSet.stderr, 'high must be a number from 0.1 to 0.99');

  // Removing an entry that is not there: said plainly, and the policy's version stays.
  const version = async () => (JSON.parse((await runIvtd(['policy', 'show', '--customer', 'acme', '--json', '--data-dir', dir])).stdout) as { version: number }).version;
  const v0 = await version();
  const absent = await runIvtd(['policy', 'remove', '--customer', 'acme', '--kind', 'publisher', '--value', 'pub-never', '--data-dir', dir]);
  t.equal(absent.code, 0, absent.stderr);
  t.match(absent.stdout, /^No such entry \(nothing changed\); the policy of \S+ has 1 entry\.\n$/, 'one entry, not "1 entries"');
  t.equal(await version(), v0, 'removing an absent entry does not bump the version');

  const srv = await startTestServer({}, dir);
  t.teardown(() => srv.stop());
  const acme = JSON.parse(made.stdout) as { partner_id: string; prebid_key: string };
  const band = async (pub: string) => {
    const q = new URLSearchParams({ p: acme.partner_id, k: acme.prebid_key, pub, node: 'n', ip: '73.162.10.20', ua: CHROME, uid: `u-${pub}`, sid: 'ok.example', adt: '1', dvt: '2' });
    const r = await fetch(`${srv.prebid}/api/v1/ivt/lookup?${q}`, { headers: { connection: 'close' } });
    return ((await r.json()) as { botRisk: { band: string } }).botRisk.band;
  };
  t.equal(await band('pub-x'), 'high', 'the policy set on the store is loaded at start');
  t.equal(await band('pub-y'), 'low');
  const add = await runIvtd(['policy', 'add', '--customer', 'acme', '--kind', 'publisher', '--value', 'pub-y', '--action', 'deny', '--data-dir', dir]);
  t.equal(add.code, 0, add.stderr);
  t.equal(await band('pub-y'), 'high', 'a change through the control socket is in the threads when the command returns');
  const rm = await runIvtd(['policy', 'remove', '--customer', 'acme', '--kind', 'publisher', '--value', 'pub-x', '--data-dir', dir]);
  t.match(rm.stdout, 'Removed the entry');
  t.equal(await band('pub-x'), 'low');
});
