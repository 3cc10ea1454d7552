import { createServer } from 'node:net';

/**
 * A TCP port that was free a moment ago, for a listener that needs an explicit port (a child
 * process told `--prebid-port N`, a server that stops and starts again on the same port).
 *
 * Drawn below the kernel's ephemeral range (32768 and up on Linux), never from it: a port the
 * kernel hands out for listen(0) is also what it hands out as the local end of outgoing
 * connections, and with the test files running side by side some other process's connection
 * (a client, npm, a browser) could take it between this check and the listener's start; the
 * listener then fails with "address already in use" (seen in CI: a server started by
 * `npm run ivtd` a few seconds after its ports were chosen). Ports below that range are only
 * ever taken by a listener that asks for one by number.
 */
const given = new Set<number>();

/**
 * Never the same port twice in one test process: a test that asks for four ports for one
 * server took the same one twice in CI (the first three were free, then closed again), and
 * the server refused to start ("--api-port and --metrics-port are both 25664").
 */
export async function freePort(): Promise<number> {
  for (let attempt = 0; attempt < 50; attempt++) {
    const port = 20_000 + Math.floor(Math.random() * 12_000);
    if (given.has(port)) continue;
    const s = createServer();
    const ok = await new Promise<boolean>((resolve) => {
      s.once('error', () => resolve(false));
      s.listen(port, '127.0.0.1', () => resolve(true));
    });
    if (ok) {
      await new Promise((r) => s.close(r));
      given.add(port);
      return port;
    }
  }
  throw new Error('no free port between 20000 and 32000 in 50 tries');
}
