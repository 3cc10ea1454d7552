// The first customer of an empty data dir, created only once every listener is open (a
// start that failed before, on a port in use say, used to create it and exit: its password,
// shown nowhere, was lost, and the next start found a customer and printed nothing).
// A marker file stands for "created, not yet shown" from just before the customer is made
// until its credentials are printed; a start that finds a customer and the marker (the
// process died in between) says how to get in again instead of printing nothing.
import { existsSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { log } from '../base/log.ts';
import type { Store } from '../store/db.ts';
import { ensureFirstCustomer } from '../store/customers.ts';
import { credentialLines } from './announce.ts';

/** In the data dir while the first customer exists but its credentials were never printed. */
export const UNSHOWN_FILE = 'first-customer.unshown';

export type FirstCustomer = NonNullable<Awaited<ReturnType<typeof ensureFirstCustomer>>>;

/** How to get into a customer whose credentials were never shown, for a person. */
export function recoveryAdvice(username: string): string {
  return (
    `the first customer was created on an earlier start but its credentials were never shown. ` +
    `Set a new password with \`ivtd user passwd --username ${username} --password-stdin\`, ` +
    'then issue new keys with `ivtd key rotate --customer default --kind prebid` (and --kind reporting), ' +
    `or log in and rotate them on the dashboard's Integrations page; then delete ${UNSHOWN_FILE} from the data dir`
  );
}

/**
 * Creates the first customer when the store has none (null otherwise). With `shown` (serve,
 * which prints the credentials) the marker is written first; `markShown` removes it.
 */
export async function createFirstCustomer(store: Store, dataDir: string, shown: boolean): Promise<FirstCustomer | null> {
  const marker = join(dataDir, UNSHOWN_FILE);
  const existing = await store.one<{ n: bigint }>('SELECT count(*) AS n FROM customers');
  if (Number(existing?.n ?? 0) > 0) {
    if (shown && existsSync(marker)) {
      const admin = await store.one<{ username: string }>('SELECT username FROM users ORDER BY created_at LIMIT 1');
      const advice = recoveryAdvice(admin?.username ?? 'admin');
      log.warn({ marker }, advice);
      process.stdout.write(`\n  No credentials to print: ${advice}.\n\n`);
    }
    return null;
  }
  if (shown) writeFileSync(marker, 'The first customer was created; its credentials were not printed yet.\n', { mode: 0o600 });
  return ensureFirstCustomer(store);
}

/** The credentials were printed: the marker goes. */
export function markShown(dataDir: string): void {
  rmSync(join(dataDir, UNSHOWN_FILE), { force: true });
}

/** A start that failed after creating the customer prints its credentials all the same. */
export function printOnFailure(c: FirstCustomer, dataDir: string): void {
  process.stdout.write(
    credentialLines(c, 'This start failed, after creating the first customer.').join('\n') + '\n',
  );
  markShown(dataDir);
}
