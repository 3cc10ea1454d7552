// docs/integrations.md, taken at its word against a real server: the exchange it shows
// (request sent as written, answer as printed), the claim about a crawler from a data
// centre, and the Go and Java bidders compiled and run as written by their own toolchains
// (Go's net/http, Java's java.net.http: HTTP clients nobody here wrote). A toolchain that is
// not installed skips its part, saying so; .ci/run installs both.
import t, { type Test } from 'tap';
import { execFile, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { startTestServer, type TestServer } from '../helpers/server.ts';

const doc = readFileSync(join(import.meta.dirname, '..', '..', 'docs', 'integrations.md'), 'utf8');
const DOC_BASE = 'http://127.0.0.1:9898';

/** The fenced block of `lang` that follows `heading` (the first one after it). */
function blockAfter(heading: string, lang: string): string {
  const at = doc.indexOf(heading);
  if (at < 0) throw new Error(`docs/integrations.md has no "${heading}"`);
  const m = new RegExp('```' + lang + '\\n([\\s\\S]*?)```').exec(doc.slice(at));
  if (!m) throw new Error(`no \`\`\`${lang} block after "${heading}"`);
  return m[1]!;
}

function lookupUrl(s: TestServer, node: string): string {
  return `${s.prebid}/api/v1/ivt/ortb?p=${s.customer.partner_id}&k=${s.customer.prebid_key}&node=${node}`;
}

async function post(url: string, body: string): Promise<{ status: number; json: Record<string, unknown> }> {
  const r = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
  return { status: r.status, json: (await r.json()) as Record<string, unknown> };
}

/** Runs a command; its exit status and output, never a throw. */
async function run(cmd: string, args: string[], env: Record<string, string>, cwd: string) {
  return promisify(execFile)(cmd, args, { env: { PATH: process.env.PATH ?? '/usr/bin:/bin', ...env }, cwd, timeout: 240_000 }).then(
    (o) => ({ status: 0, stdout: o.stdout, stderr: o.stderr }),
    (e: { code?: number; stdout?: string; stderr?: string }) => ({ status: e.code ?? -1, stdout: e.stdout ?? '', stderr: e.stderr ?? '' }),
  );
}

/** false when `cmd` runs here, else why its test is skipped. */
function missing(cmd: string, versionArg: string, pkg: string): false | string {
  return spawnSync(cmd, [versionArg], { stdio: 'ignore' }).status === 0 ? false : `${cmd} is not installed here (Debian ${pkg}; .ci/run installs it)`;
}

// The documented request's body, and the same from a data centre with a crawler's UA.
const exchange = blockAfter('## The exchange, exactly', '');
const requestText = exchange.slice(exchange.indexOf('\n\n') + 2);
const documented = JSON.parse(blockAfter('## The exchange, exactly', 'json')) as Record<string, unknown>;
const crawlerFromCloud = (() => {
  const b = JSON.parse(requestText) as { device: { ip: string; ua: string } };
  b.device.ip = '52.94.76.10'; // an AWS address in the embedded cloud ranges
  // A crawler whose operator publishes no addresses: a declared crawler from anywhere.
  b.device.ua = 'Mozilla/5.0 (compatible; SemrushBot/7~bl; +http://www.semrush.com/bot.html)';
  return JSON.stringify(b);
})();

t.test('the exchange, exactly: the request as written gets the answer as printed', async (t) => {
  t.match(exchange, /^POST \/api\/v1\/ivt\/ortb\?p=<partner_id>&k=<prebid_key>&node=pbs-eu-1 HTTP\/1\.1\n/, 'the request line');
  const s = await startTestServer({ threads: 1 });
  t.teardown(() => s.stop());
  const r = await post(lookupUrl(s, 'pbs-eu-1'), requestText);
  t.equal(r.status, 200);
  // The lid names this one lookup: its form is checked, not its value.
  t.match(r.json.lid, /^[A-Za-z0-9_-]{100,}$/, 'a lid');
  t.match(documented.lid, /^AQ…/, 'the doc shows a lid as elided');
  t.same({ ...r.json, lid: 'elided' }, { ...documented, lid: 'elided' }, 'every other member as printed, in value');
  t.same(Object.keys(r.json), Object.keys(documented), 'and in order');

  const c = await post(lookupUrl(s, 'pbs-eu-1'), crawlerFromCloud);
  t.equal(c.status, 200);
  t.match(c.json, { botRisk: { band: 'high' }, nbr: 3 }, 'a crawler UA from a data centre: high, nbr 3');
  t.match(doc, /from a data centre with a crawler's UA answers `"band":"high"`,\s+`"nbr":3` and `"reasons":\[\{"code":"ua_declared_bot","class":"GIVT"\},…\]`/, 'as the doc says');
  t.match((c.json.reasons as { code: string }[])[0], { code: 'ua_declared_bot', class: 'GIVT' });
});

/**
 * Sends each body `tries` times through a bidder's `Verdict`/`verdict` as documented and
 * checks what it returned against the server's own answer to the same body: the bidder must
 * return the answer's `nbr` (0 without one). A call over the documented 10 ms budget fails
 * open (returns 0), which a cold client can do on its first calls: at least one call must
 * return the nbr, and none any other code.
 */
async function checkBidder(t: Test, s: TestServer, name: string, out: string): Promise<void> {
  const rows = out.trim().split('\n').map((l) => l.split(' '));
  t.equal(rows.length, 2, `${name}: a line for each body: ${out}`);
  const direct = [JSON.parse(requestText), JSON.parse(crawlerFromCloud)];
  const expected: number[] = [];
  for (const body of direct) {
    const r = await post(lookupUrl(s, 'bidder-eu-1'), JSON.stringify(body));
    expected.push(typeof r.json.nbr === 'number' ? r.json.nbr : 0);
  }
  t.same(expected, [0, 3], 'the server: no nbr for the clean request, 3 for the crawler');
  rows.forEach((verdicts, i) => {
    const got = verdicts.map(Number);
    t.ok(got.length >= 5 && got.every((v) => v === 0 || v === expected[i]), `${name}, body ${i}: only ${expected[i]} or a fail-open 0 (${got.join(',')})`);
    t.ok(got.includes(expected[i]!), `${name}, body ${i}: the verdict ${expected[i]} returned`);
  });
}

/**
 * A server and a scratch directory for one bidder (both gone at the test's end), the doc's
 * code block of `lang` under `heading` pointed at that server, and the two bodies as files.
 */
async function bidderSetup(t: Test, heading: string, lang: string) {
  const code = blockAfter(heading, lang);
  t.match(code, DOC_BASE, 'the doc calls the default pre-bid port');
  const s = await startTestServer({ threads: 1 });
  const dir = mkdtempSync(join(tmpdir(), `ivtd-${lang}-`));
  t.teardown(async () => {
    await s.stop();
    rmSync(dir, { recursive: true, force: true });
  });
  const files = [join(dir, 'clean.json'), join(dir, 'crawler.json')];
  writeFileSync(files[0]!, requestText);
  writeFileSync(files[1]!, crawlerFromCloud);
  return { s, dir, files, code: code.replaceAll(DOC_BASE, s.prebid) };
}

t.test('the Go bidder, compiled and run as written', { skip: missing('go', 'version', 'golang-go') }, async (t) => {
  const { s, dir, files, code } = await bidderSetup(t, '## From a bidder in Go', 'go');
  const program = `package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"time"
)

var partnerID = os.Getenv("IVTD_P")
var prebidKey = os.Getenv("IVTD_K")

${code}
func main() {
	for _, f := range os.Args[1:] {
		body, err := os.ReadFile(f)
		if err != nil {
			panic(err)
		}
		var got []string
		for i := 0; i < 20; i++ {
			got = append(got, fmt.Sprint(Verdict(context.Background(), body)))
		}
		fmt.Println(strings.Join(got, " "))
	}
}
`;
  writeFileSync(join(dir, 'bidder.go'), program);
  const env = { HOME: dir, GOCACHE: join(process.env.HOME ?? dir, '.cache', 'go-build'), GO111MODULE: 'off', IVTD_P: s.customer.partner_id, IVTD_K: s.customer.prebid_key };
  const r = await run('go', ['run', 'bidder.go', ...files], env, dir);
  t.equal(r.status, 0, `go run: ${r.stderr}`);
  if (r.status === 0) await checkBidder(t, s, 'Go', r.stdout);
});

t.test('the Java bidder, compiled and run as written', { skip: missing('javac', '-version', 'openjdk-17-jdk-headless') }, async (t) => {
  const { s, dir, files, code } = await bidderSetup(t, '## From a bidder in Java', 'java');
  const indented = code.replace(/^/gm, '  ');
  const program = `import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

public class Bidder {
  static final String PARTNER_ID = System.getenv("IVTD_P");
  static final String PREBID_KEY = System.getenv("IVTD_K");

${indented}
  public static void main(String[] args) throws IOException {
    for (String f : args) {
      String body = Files.readString(Path.of(f));
      List<String> got = new ArrayList<>();
      for (int i = 0; i < 20; i++) got.add(Integer.toString(verdict(body)));
      System.out.println(String.join(" ", got));
    }
  }
}
`;
  writeFileSync(join(dir, 'Bidder.java'), program);
  // Java 11+ runs a single source file as it is (compiled in memory).
  const r = await run('java', ['Bidder.java', ...files], { HOME: dir, IVTD_P: s.customer.partner_id, IVTD_K: s.customer.prebid_key }, dir);
  t.equal(r.status, 0, `java: ${r.stderr}`);
  if (r.status === 0) await checkBidder(t, s, 'Java', r.stdout);
});
