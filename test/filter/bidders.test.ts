// The Go and Java bidders of docs/integrations.md, each made a bid endpoint by its own
// language's HTTP server (Go's net/http, the JDK's com.sun.net.httpserver: servers nobody
// here wrote), serve as the filter's upstream: a clean bid request reaches them byte for byte
// with the verdict header, kept-alive connections work with their servers, a crawler is
// answered no-bid by the filter and never reaches them. A toolchain that is not installed
// skips its part, saying so; .ci/run installs both.
import t, { type Test } from 'tap';
import { execFile, spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { Store } from '../../src/store/db.ts';
import { createCustomer } from '../../src/store/customers.ts';
import { startTestServer } from '../helpers/server.ts';
import { freePort } from '../helpers/ports.ts';
import { until } from '../helpers/until.ts';
import { SHAPES } from '../helpers/ortb-shapes.ts';

const doc = readFileSync(join(import.meta.dirname, '..', '..', 'docs', 'integrations.md'), 'utf8');
const DOC_BASE = 'http://127.0.0.1:9898';
const SPIDER = JSON.stringify((JSON.parse(readFileSync(join(import.meta.dirname, '..', 'fixtures', 'ortb', 'supplemental', 'known-spider-nbr-3.json'), 'utf8')) as { request: unknown }).request);

function blockAfter(heading: string, lang: string): string {
  const at = doc.indexOf(heading);
  if (at < 0) throw new Error(`docs/integrations.md has no "${heading}"`);
  const m = new RegExp('```' + lang + '\\n([\\s\\S]*?)```').exec(doc.slice(at));
  if (!m) throw new Error(`no \`\`\`${lang} block after "${heading}"`);
  return m[1]!;
}

function missing(cmd: string, versionArg: string, pkg: string): false | string {
  return spawnSync(cmd, [versionArg], { stdio: 'ignore' }).status === 0 ? false : `${cmd} is not installed here (Debian ${pkg}; .ci/run installs it)`;
}

const GO = (code: string) => `package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"sync/atomic"
	"time"
)

var partnerID = os.Getenv("IVTD_P")
var prebidKey = os.Getenv("IVTD_K")

${code}
var seen int64

func main() {
	http.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		n := atomic.AddInt64(&seen, 1)
		sum := sha256.Sum256(body)
		var req struct {
			ID string \`json:"id"\`
		}
		json.Unmarshal(body, &req)
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("X-Bidder", "go")
		if nbr := Verdict(r.Context(), body); nbr != 0 {
			fmt.Fprintf(w, \`{"id":%q,"nbr":%d}\`, req.ID, nbr)
			return
		}
		fmt.Fprintf(w, \`{"id":%q,"seatbid":[],"ext":{"seen":%d,"sha256":%q,"verdict":%q,"uri":%q}}\`, req.ID, n, hex.EncodeToString(sum[:]), r.Header.Get("X-Ivtd-Verdict"), r.URL.RequestURI())
	})
	fmt.Println("listening")
	if err := http.ListenAndServe("127.0.0.1:"+os.Getenv("PORT"), nil); err != nil {
		panic(err)
	}
}
`;

const JAVA = (code: string) => `import com.sun.net.httpserver.HttpServer;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.time.Duration;
import java.util.HexFormat;
import java.util.concurrent.Executors;
import java.util.concurrent.atomic.AtomicLong;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

public class Bidder {
  static final String PARTNER_ID = System.getenv("IVTD_P");
  static final String PREBID_KEY = System.getenv("IVTD_K");

${code.replace(/^/gm, '  ')}
  static final AtomicLong SEEN = new AtomicLong();
  static final Pattern ID = Pattern.compile("\\"id\\"\\\\s*:\\\\s*\\"([^\\"]*)\\"");

  public static void main(String[] args) throws Exception {
    HttpServer server = HttpServer.create(new InetSocketAddress("127.0.0.1", Integer.parseInt(System.getenv("PORT"))), 0);
    server.setExecutor(Executors.newFixedThreadPool(4));
    server.createContext("/", ex -> {
      byte[] body = ex.getRequestBody().readAllBytes();
      long n = SEEN.incrementAndGet();
      String text = new String(body, StandardCharsets.UTF_8);
      Matcher m = ID.matcher(text);
      String id = m.find() ? m.group(1) : "";
      String sha;
      try {
        sha = HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(body));
      } catch (java.security.NoSuchAlgorithmException e) {
        throw new IOException(e);
      }
      int nbr = verdict(text);
      String verdictHeader = ex.getRequestHeaders().getFirst("X-Ivtd-Verdict");
      String out = nbr != 0
          ? "{\\"id\\":\\"" + id + "\\",\\"nbr\\":" + nbr + "}"
          : "{\\"id\\":\\"" + id + "\\",\\"seatbid\\":[],\\"ext\\":{\\"seen\\":" + n + ",\\"sha256\\":\\"" + sha + "\\",\\"verdict\\":\\"" + (verdictHeader == null ? "" : verdictHeader) + "\\",\\"uri\\":\\"" + ex.getRequestURI() + "\\"}}";
      byte[] b = out.getBytes(StandardCharsets.UTF_8);
      ex.getResponseHeaders().set("Content-Type", "application/json");
      ex.getResponseHeaders().set("X-Bidder", "java");
      ex.sendResponseHeaders(200, b.length);
      ex.getResponseBody().write(b);
      ex.close();
    });
    server.start();
    System.out.println("listening");
  }
}
`;

/** A bidder process started by this test (ended by its pid at the test's end), once it says it listens. */
async function startBidder(t: Test, cmd: string, args: string[], env: Record<string, string>, cwd: string): Promise<ChildProcess> {
  const child = spawn(cmd, args, { env: { PATH: process.env.PATH ?? '/usr/bin:/bin', ...env }, cwd, stdio: ['ignore', 'pipe', 'pipe'] });
  t.teardown(() => {
    child.kill('SIGTERM');
  });
  let out = '';
  let err = '';
  child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (err += d.toString()));
  await until(`${cmd} bidder listening (${err.slice(0, 300)})`, async () => {
    if (child.exitCode !== null) throw new Error(`${cmd} exited ${child.exitCode}: ${err}`);
    return out.includes('listening');
  }, 120_000);
  return child;
}

async function throughFilter(t: Test, lang: 'go' | 'java', heading: string) {
  const dir = mkdtempSync(join(tmpdir(), `ivtd-filter-${lang}-`));
  const store = await Store.open(join(dir, 'data'));
  const c = await createCustomer(store, { name: 'Bidder Co', username: 'bidder', password: 'correct horse battery' });
  await store.close();
  const bidderPort = await freePort();
  const s = await startTestServer({ threads: 1, filters: [{ name: `${lang}-bidder`, port: 0, upstream: `http://127.0.0.1:${bidderPort}/openrtb2/auction`, partner: c.partner_id, mode: 'block', nobid: 'nbr', timeoutMs: 2000, maxSockets: 4 }] }, join(dir, 'data'));
  t.teardown(async () => {
    await s.stop();
    rmSync(dir, { recursive: true, force: true });
  });
  const code = blockAfter(heading, lang).replaceAll(DOC_BASE, s.prebid);
  const env = { HOME: dir, PORT: String(bidderPort), IVTD_P: c.partner_id, IVTD_K: c.prebid_key };
  if (lang === 'go') {
    writeFileSync(join(dir, 'bidder.go'), GO(code));
    const built = await promisify(execFile)('go', ['build', '-o', 'bidder', 'bidder.go'], { cwd: dir, env: { PATH: process.env.PATH ?? '', HOME: dir, GOCACHE: join(process.env.HOME ?? dir, '.cache', 'go-build'), GO111MODULE: 'off' }, timeout: 240_000 }).then(() => '', (e: { stderr?: string }) => e.stderr ?? 'go build failed');
    t.equal(built, '', 'go build');
    await startBidder(t, join(dir, 'bidder'), [], env, dir);
  } else {
    writeFileSync(join(dir, 'Bidder.java'), JAVA(code));
    await startBidder(t, 'java', ['Bidder.java'], env, dir);
  }
  const filter = `http://127.0.0.1:${s.server.lookups.filterPorts[`${lang}-bidder`]}`;
  const send = async (path: string, body: string) => {
    const r = await fetch(filter + path, { method: 'POST', body, headers: { 'content-type': 'application/json' } });
    return { status: r.status, bidder: r.headers.get('x-bidder'), json: (await r.json()) as { id: string; nbr?: number; ext?: { seen: number; sha256: string; verdict: string; uri: string } } };
  };
  let seen = 0;
  // Without their tmax (one has 120 ms, less than a cold JVM may take): the filter's 2 s applies.
  const untimed = (r: object) => ({ ...r, tmax: undefined });
  for (const [name, request] of Object.entries(SHAPES)) {
    const body = JSON.stringify(untimed(request), null, 1);
    const r = await send('/openrtb2/auction?src=' + lang, body);
    t.equal(r.status, 200, `${name}: 200`);
    t.equal(r.bidder, lang, `${name}: the ${lang} bidder's answer, its header kept`);
    t.equal(r.json.id, (request as { id: string }).id);
    if (r.json.ext === undefined) continue; // the bidder's own Verdict said no-bid (or it was blocked)
    t.equal(r.json.ext.sha256, createHash('sha256').update(body).digest('hex'), `${name}: the body arrived byte for byte`);
    t.match(r.json.ext.verdict, /^band=(low|medium); score=[\d.]+; lid=/, `${name}: with the verdict header`);
    t.equal(r.json.ext.uri, '/openrtb2/auction?src=' + lang);
    t.ok(r.json.ext.seen > seen, 'counted by the bidder');
    seen = r.json.ext.seen;
  }
  t.ok(seen >= 5, `the ${lang} bidder bid on the clean ones (${seen})`);
  const spider = await send('/openrtb2/auction', SPIDER);
  t.same({ status: spider.status, bidder: spider.bidder, json: spider.json }, { status: 200, bidder: null, json: { id: 'req-gb-1', nbr: 3 } }, 'a crawler: no-bid from the filter');
  const next = await send('/openrtb2/auction', JSON.stringify(untimed(SHAPES['web banner, site and publisher, schain in source']!)));
  t.equal(next.json.ext?.seen, seen + 1, 'the crawler never reached the bidder');
}

t.test('the Go bidder of docs/integrations.md behind the filter', { skip: missing('go', 'version', 'golang-go') }, async (t) => {
  await throughFilter(t, 'go', '## From a bidder in Go');
});

t.test('the Java bidder of docs/integrations.md behind the filter', { skip: missing('javac', '-version', 'openjdk-17-jdk-headless') }, async (t) => {
  await throughFilter(t, 'java', '## From a bidder in Java');
});
