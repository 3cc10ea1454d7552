// A first start that failed (a port in use) used to create the first customer and exit:
// the credentials were printed nowhere, the next start found a customer and printed nothing,
// and the admin was locked out for good. The customer is created once the listeners are
// open; a data dir whose customer was never shown says how to get in again.
import t from 'tap';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from '../helpers/ports.ts';
import { startServe } from '../helpers/serve-process.ts';
import { runIvtd } from '../cli/run-cli.ts';
import { Store } from '../../src/store/db.ts';
import { UNSHOWN_FILE } from '../../src/server/first-customer.ts';

async function customers(dataDir: string): Promise<number> {
  const store = await Store.open(dataDir);
  try {
    return Number((await store.one<{ n: bigint }>('SELECT count(*) AS n FROM customers'))!.n);
  } finally {
    await store.close();
  }
}

async function ports(): Promise<string[]> {
  return ['--prebid-port', `${await freePort()}`, '--api-port', `${await freePort()}`, '--reporting-port', `${await freePort()}`, '--metrics-port', `${await freePort()}`];
}

t.test('a first start on a held port creates no customer; the next start prints the credentials', async (t) => {
  const dataDir = mkdtempSync(join(tmpdir(), 'ivtd-first-'));
  t.teardown(() => rmSync(dataDir, { recursive: true, force: true }));
  const held = await freePort();
  const holder = createServer();
  await new Promise<void>((r) => holder.listen(held, '127.0.0.1', () => r()));
  const failed = await runIvtd(['serve', '--data-dir', dataDir, '--prebid-port', `${await freePort()}`, '--api-port', `${held}`, '--reporting-port', `${await freePort()}`, '--metrics-port', `${await freePort()}`]);
  await new Promise<void>((r) => holder.close(() => r()));
  t.equal(failed.code, 1, 'the start fails');
  t.match(failed.stderr, /account API: cannot listen/);
  t.equal(await customers(dataDir), 0, 'and leaves no customer behind');
  t.notOk(existsSync(join(dataDir, UNSHOWN_FILE)), 'nor a customer waiting to be shown');

  const serve = startServe(['--data-dir', dataDir, ...(await ports())]);
  t.teardown(() => serve.child.kill('SIGKILL'));
  const m = await serve.waitFor(/password\s+(\S+)/);
  t.ok(m[1]!.length >= 12, 'the next start prints the admin password');
  await serve.waitFor(/ivtd ready/);
  t.notOk(existsSync(join(dataDir, UNSHOWN_FILE)), 'shown: no marker left');
  serve.child.kill('SIGTERM');
  t.equal(await serve.exited, 0);
});

t.test('a customer created but never shown: the next start says how to get in again', async (t) => {
  const dataDir = mkdtempSync(join(tmpdir(), 'ivtd-unshown-'));
  t.teardown(() => rmSync(dataDir, { recursive: true, force: true }));
  const one = startServe(['--data-dir', dataDir, ...(await ports())]);
  t.teardown(() => one.child.kill('SIGKILL'));
  await one.waitFor(/ivtd ready/);
  one.child.kill('SIGTERM');
  t.equal(await one.exited, 0);
  // As a process killed between creating the customer and printing it leaves the data dir.
  writeFileSync(join(dataDir, UNSHOWN_FILE), 'x\n');
  const two = startServe(['--data-dir', dataDir, ...(await ports())]);
  t.teardown(() => two.child.kill('SIGKILL'));
  await two.waitFor(/ivtd ready/);
  t.match(two.out(), /credentials were never shown.*ivtd user passwd --username admin --password-stdin.*ivtd key rotate --customer default --kind prebid/s, 'names the commands that let the admin in again');
  t.notMatch(two.out(), /password\s+\S{12,}/, 'prints no credentials it does not have');
  two.child.kill('SIGTERM');
  t.equal(await two.exited, 0);
});
