// TLS on the account and reporting listeners (--tls-cert, --tls-key): the PEM pair read and
// checked (a key that does not match its certificate, a file that is not PEM) before use,
// and swapped in on SIGHUP for the connections that follow. Files are re-read on every
// SIGHUP, so a certificate renewed in place is picked up; a bad new pair keeps the old one.
import { readFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { X509Certificate } from 'node:crypto';
import type { Server as HttpsServer } from 'node:https';
import { createSecureContext } from 'node:tls';

/** A certificate chain and its private key, as PEM bytes, known to go together. */
export interface TlsPair {
  cert: Buffer;
  key: Buffer;
  certPath: string;
  keyPath: string;
  /** The leaf certificate's subject and end of validity, for the log. */
  subject: string;
  validTo: string;
  /** True when the leaf certificate's validity has ended already. */
  expired: boolean;
}

export class TlsError extends Error {
  override name = 'TlsError';
}

function readPem(path: string, what: string): Buffer {
  try {
    return readFileSync(path);
  } catch (e) {
    throw new TlsError(`cannot read the TLS ${what} ${path}: ${(e as Error).message}`);
  }
}

async function readPemAsync(path: string, what: string): Promise<Buffer> {
  try {
    return await readFile(path);
  } catch (e) {
    throw new TlsError(`cannot read the TLS ${what} ${path}: ${(e as Error).message}`);
  }
}

/** Reads and checks a pair; throws TlsError naming the file and what is wrong with it. */
export function readTlsPair(certPath: string, keyPath: string, now = Date.now()): TlsPair {
  return checkTlsPair(readPem(certPath, 'certificate'), readPem(keyPath, 'key'), certPath, keyPath, now);
}

/** readTlsPair off the main thread's file reads (for SIGHUP: the event loop keeps going meanwhile). */
export async function readTlsPairAsync(certPath: string, keyPath: string, now = Date.now()): Promise<TlsPair> {
  const [cert, key] = await Promise.all([readPemAsync(certPath, 'certificate'), readPemAsync(keyPath, 'key')]);
  return checkTlsPair(cert, key, certPath, keyPath, now);
}

function checkTlsPair(cert: Buffer, key: Buffer, certPath: string, keyPath: string, now: number): TlsPair {
  let leaf: X509Certificate;
  try {
    leaf = new X509Certificate(cert);
  } catch (e) {
    throw new TlsError(`the TLS certificate ${certPath} is not a PEM certificate: ${(e as Error).message}`);
  }
  try {
    // Parses the key and checks that it belongs to the certificate.
    createSecureContext({ cert, key });
  } catch (e) {
    const msg = (e as Error).message;
    throw new TlsError(
      /mismatch/i.test(msg)
        ? `the TLS key ${keyPath} does not belong to the certificate ${certPath}`
        : `the TLS key ${keyPath} cannot be used with the certificate ${certPath}: ${msg}`,
    );
  }
  return { cert, key, certPath, keyPath, subject: leaf.subject.replace(/\n/g, ', '), validTo: leaf.validTo, expired: Date.parse(leaf.validTo) < now };
}

/** The pair in use and the listeners that serve it. */
export class TlsCredentials {
  private readonly servers = new Set<HttpsServer>();

  constructor(private current: TlsPair) {}

  get pair(): TlsPair {
    return this.current;
  }

  /** Server options of a listener created with this pair. */
  serverOptions(): { cert: Buffer; key: Buffer } {
    return { cert: this.current.cert, key: this.current.key };
  }

  /** A listener to update on use(); it leaves the set when it closes. */
  track(server: HttpsServer): void {
    this.servers.add(server);
    server.once('close', () => this.servers.delete(server));
  }

  /** New connections get `next`; those already open keep the pair they began with. */
  use(next: TlsPair): void {
    for (const s of this.servers) s.setSecureContext({ cert: next.cert, key: next.key });
    this.current = next;
  }
}

/** The configured pair, read and checked; null when TLS is off. Throws TlsError. */
export function tlsFromConfig(config: { tlsCert: string | undefined; tlsKey: string | undefined }): TlsCredentials | null {
  if (config.tlsCert === undefined && config.tlsKey === undefined) return null;
  return new TlsCredentials(readTlsPair(...pairPaths(config)));
}

function pairPaths(config: { tlsCert: string | undefined; tlsKey: string | undefined }): [string, string] {
  if (config.tlsCert === undefined || config.tlsKey === undefined) {
    throw new TlsError('--tls-cert and --tls-key go together: give both (HTTPS on the account and reporting ports) or neither');
  }
  return [config.tlsCert, config.tlsKey];
}

/**
 * What a SIGHUP does with TLS under the re-read config: the pair to use next, read again
 * even when its paths are unchanged (a certificate renewed in place), or null when TLS is
 * off; `restartOnly` when the config turns TLS on or off, which takes a restart (the
 * listeners keep what they serve). Throws TlsError when the new pair is unusable.
 */
export async function planTlsReload(current: TlsCredentials | null, next: { tlsCert: string | undefined; tlsKey: string | undefined }): Promise<{ pair: TlsPair | null; restartOnly: boolean }> {
  const wanted = next.tlsCert !== undefined || next.tlsKey !== undefined;
  if (current === null || !wanted) return { pair: null, restartOnly: wanted !== (current !== null) };
  return { pair: await readTlsPairAsync(...pairPaths(next)), restartOnly: false };
}
