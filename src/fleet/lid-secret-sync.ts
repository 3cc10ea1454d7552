// The lookup-id secret across a fleet: every host must sign and check lids with the same
// one, since a beacon lands on whichever host the load balancer picks. The first host to
// reach ClickHouse offers its own (its <data-dir>/lid.key); every host takes the earliest
// offered and keeps it in its own lid.key, so it starts with it even while ClickHouse is
// away. ClickHouse holds the secret in clear: whoever reads that table can forge lids (the
// same people can already read the fleet's counts and key hashes).
import { log } from '../base/log.ts';
import type { ClickHouse } from './clickhouse.ts';

interface Row {
  secret: string;
  host: string;
}

/** The fleet's secret: the earliest offered, after offering `local` if none is there yet. */
export async function agreeLidSecret(ch: ClickHouse, local: Uint8Array, host: string): Promise<Uint8Array> {
  const earliest = async () => (await ch.rows<Row>('SELECT secret, host FROM lid_secrets ORDER BY offered_at_ms, host LIMIT 1', 'lid secret'))[0];
  let row = await earliest();
  if (row === undefined) {
    await ch.insert('lid_secrets', [{ offered_at_ms: Date.now(), host, secret: Buffer.from(local).toString('hex') }]);
    row = await earliest();
    if (row === undefined) throw new Error('the lid secret offered to ClickHouse cannot be read back');
  }
  const secret = Buffer.from(row.secret, 'hex');
  if (secret.length !== local.length) throw new Error(`the fleet's lid secret in ClickHouse is ${secret.length} bytes, expected ${local.length}`);
  if (!secret.equals(Buffer.from(local))) log.info({ offeredBy: row.host }, "fleet: this host takes the fleet's lookup-id secret");
  return new Uint8Array(secret);
}

