// The reporting examples in docs/reporting-api.md, run as written (bash, curl, jq) against a
// real server: with dates relative to today they keep working; fixed dates would age past
// the retention and get 422.
import t from 'tap';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { startTestServer } from '../helpers/server.ts';

const ROOT = join(import.meta.dirname, '..', '..');
const doc = readFileSync(join(import.meta.dirname, '..', '..', 'docs', 'reporting-api.md'), 'utf8');

t.test('docs/reporting-api.md: the curl examples answer 200', async (t) => {
  const block = /```sh\n(R=[\s\S]*?)```/.exec(doc)?.[1];
  t.ok(block, 'the examples block is there');
  t.notMatch(block!, /\d{4}-\d{2}-\d{2}/, 'no fixed dates');
  const srv = await startTestServer();
  t.teardown(() => srv.stop());
  const script = block!
    .replace(/^R=.*$/m, `R=${srv.reporting}`)
    .replace(/^CID=.*$/m, `CID=${srv.customer.customer_id}`)
    .replace(/^KEY=.*$/m, `KEY=${srv.customer.reporting_key}`)
    .replaceAll('http://127.0.0.1:9899', srv.api);
  // Every request must succeed: curl fails (and with it the script) on a 4xx or 5xx.
  // Asynchronously: the server answering is in this process.
  const r = await promisify(execFile)('bash', ['--norc', '--noprofile', '-c', `set -euo pipefail\ncurl() { command curl -sS --fail-with-body "$@"; echo; }\n${script}`], {
    env: { PATH: process.env.PATH ?? '/usr/bin:/bin', USER: srv.customer.username, PASS: srv.customer.password },
    timeout: 60_000,
  }).then(
    (o) => ({ status: 0, ...o }),
    (e: { code?: number; stdout?: string; stderr?: string }) => ({ status: e.code ?? -1, stdout: e.stdout ?? '', stderr: e.stderr ?? '' }),
  );
  t.equal(r.status, 0, `the examples ran: ${r.stderr}${r.stdout}`);
  const answers = r.stdout.split('\n').filter((l) => l.startsWith('{"meta"'));
  t.equal(answers.length, 4, 'four reports');
  for (const a of answers) t.match(JSON.parse(a), { meta: { start_date: /^\d{4}-\d{2}-\d{2}$/ }, rows: Array });
});

t.test('README and docs/ link only to files inside the repository, and those exist', async (t) => {
  const files = ['README.md', ...readdirSync(join(ROOT, 'docs')).filter((f) => f.endsWith('.md')).map((f) => `docs/${f}`)];
  let links = 0;
  for (const f of files) {
    const text = readFileSync(join(ROOT, f), 'utf8');
    t.notMatch(text, /\.\.\/shared\//, `${f}: nothing beside the checkout (a clone has no ../shared)`);
    for (const m of text.matchAll(/\]\(([^)#\s]+)(?:#[^)]*)?\)/g)) {
      const target = m[1]!;
      if (/^[a-z]+:/.test(target)) continue; // https:, mailto:
      const path = resolve(ROOT, dirname(f), target);
      t.notOk(relative(ROOT, path).startsWith('..'), `${f} → ${target} stays inside the repository`);
      t.ok(existsSync(path), `${f} → ${target} exists`);
      links++;
    }
  }
  t.ok(links > 10, `${links} relative links checked`);
});
