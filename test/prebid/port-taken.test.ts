// uWebSockets.js listens with SO_REUSEPORT, so a second `ivtd serve` on the same pre-bid
// port (another data dir, other account and metrics ports) used to start and silently take
// about half of the first one's connections. It must refuse to start instead, exit non-zero
// and name the port; the lookup threads of one process still share it.
import t from 'tap';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from '../helpers/ports.ts';
import { startTestServer } from '../helpers/server.ts';
import { runIvtd } from '../cli/run-cli.ts';

t.test('a second ivtd on a pre-bid port in use exits 1 and names the port', async (t) => {
  const port = await freePort();
  const first = await startTestServer({ prebidPort: port, threads: 2 });
  t.teardown(() => first.stop());
  t.equal(first.server.ports.prebid, port, 'the first server (two lookup threads) shares one port');
  const dataDir = mkdtempSync(join(tmpdir(), 'ivtd-second-'));
  t.teardown(() => rmSync(dataDir, { recursive: true, force: true }));
  const second = await runIvtd([
    'serve', '--data-dir', dataDir, '--prebid-port', `${port}`,
    '--api-port', `${await freePort()}`, '--reporting-port', `${await freePort()}`, '--metrics-port', `${await freePort()}`,
  ]);
  t.equal(second.code, 1, 'the second instance exits 1');
  t.match(second.stderr + second.stdout, new RegExp(`pre-bid port 127\\.0\\.0\\.1:${port} is already in use`), 'and says which port is taken');
  // The first one still answers all of its connections.
  for (let i = 0; i < 10; i++) {
    const r = await fetch(`${first.prebid}/health-check`, { headers: { connection: 'close' } });
    t.equal(r.status, 200);
  }
});
