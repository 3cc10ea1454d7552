// Secrets at rest: API keys are stored as SHA-256 hashes (they are 192-bit random, so a
// fast hash is enough and the lookup thread can afford it); passwords use scrypt.
import { createHash, randomBytes, randomInt, scrypt, timingSafeEqual, type ScryptOptions } from 'node:crypto';

export type KeyKind = 'prebid' | 'reporting';
export const KEY_KINDS: readonly KeyKind[] = ['prebid', 'reporting'];

const KEY_PREFIX: Record<KeyKind, string> = { prebid: 'ivp_', reporting: 'ivr_' };

export const PASSWORD_MIN = 8;
export const PASSWORD_MAX = 1024;

/**
 * New password hashes. OWASP's Password Storage Cheat Sheet asks for scrypt N=2^17, r=8,
 * p=1 or an equal-cost variant; N=2^14, r=8, p=5 is the one it lists that keeps memory at
 * 16 MiB per check (the p passes run one after another), so a burst of logins costs CPU
 * time, bounded by the checks in flight (account/login-throttle.ts), not 128 MiB each.
 * Hashes made with weaker parameters still verify and are upgraded at the next login.
 */
export const SCRYPT = { N: 16384, r: 8, p: 5, keyLen: 32, saltLen: 16 } as const;
// Bounds on parameters read back from a stored hash, so a corrupt row cannot pin the CPU.
const SCRYPT_MAX_N = 1 << 20;
const SCRYPT_MAXMEM = 256 * 1024 * 1024;

/** A new API key: `ivp_`/`ivr_` followed by 32 base64url characters (24 random bytes). */
export function newKey(kind: KeyKind): string {
  return KEY_PREFIX[kind] + randomBytes(24).toString('base64url');
}

export function hashKey(key: string): string {
  return createHash('sha256').update(key).digest('hex');
}

/** Why `pw` is not acceptable as a new password, or undefined when it is. */
export function passwordProblem(pw: string): string | undefined {
  if (pw.length < PASSWORD_MIN) return `password must be at least ${PASSWORD_MIN} characters`;
  if (pw.length > PASSWORD_MAX) return `password must be at most ${PASSWORD_MAX} characters`;
  // Nobody types one at a login form: a tab or a line end pasted or piped with the password.
  if (/[\x00-\x1f\x7f]/.test(pw)) return 'password must not contain control characters (a tab, a line end)';
  // What login reads as bytes that were not UTF-8 (U+FFFD, or a lone surrogate, which has no
  // UTF-8 form) could never be typed there again: the user would be locked out.
  if (!pw.isWellFormed() || pw.includes('\ufffd')) return 'password is not valid text: it holds a replacement character (U+FFFD) or half of a UTF-16 pair';
  return undefined;
}

function scryptAsync(pw: string, salt: Buffer, keyLen: number, opts: ScryptOptions): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    scrypt(pw, salt, keyLen, opts, (err, key) => (err ? reject(err) : resolve(key)));
  });
}

export interface ScryptCost {
  N: number;
  r: number;
  p: number;
}

/** `scrypt$N$r$p$<salt base64>$<hash base64>` with a fresh 16-byte salt (`cost`: tests and the login benchmark). */
export async function hashPassword(pw: string, cost: ScryptCost = SCRYPT): Promise<string> {
  const salt = randomBytes(SCRYPT.saltLen);
  const { N, r, p } = cost;
  const hash = await scryptAsync(pw, salt, SCRYPT.keyLen, { N, r, p, maxmem: SCRYPT_MAXMEM });
  return `scrypt$${N}$${r}$${p}$${salt.toString('base64')}$${hash.toString('base64')}`;
}

interface ParsedHash {
  N: number;
  r: number;
  p: number;
  salt: Buffer;
  hash: Buffer;
}

function parseHash(stored: string): ParsedHash | undefined {
  const parts = stored.split('$');
  if (parts.length !== 6 || parts[0] !== 'scrypt') return undefined;
  const [N, r, p] = [Number(parts[1]), Number(parts[2]), Number(parts[3])];
  if (![N, r, p].every(Number.isSafeInteger) || N < 2 || N > SCRYPT_MAX_N || r < 1 || r > 32 || p < 1 || p > 16) {
    return undefined;
  }
  const salt = Buffer.from(parts[4]!, 'base64');
  const hash = Buffer.from(parts[5]!, 'base64');
  if (salt.length === 0 || hash.length === 0) return undefined;
  return { N, r, p, salt, hash };
}

/** True when a readable stored hash costs less to check than SCRYPT: hash it again at the next login. */
export function needsRehash(stored: string): boolean {
  const h = parseHash(stored);
  return h !== undefined && h.N * h.r * h.p < SCRYPT.N * SCRYPT.r * SCRYPT.p;
}

/** True when `pw` matches the stored scrypt hash; false for a wrong password or an unreadable hash. */
export async function verifyPassword(pw: string, stored: string): Promise<boolean> {
  const h = parseHash(stored);
  if (!h || pw.length > PASSWORD_MAX) return false;
  const got = await scryptAsync(pw, h.salt, h.hash.length, { N: h.N, r: h.r, p: h.p, maxmem: SCRYPT_MAXMEM });
  return timingSafeEqual(got, h.hash);
}

/**
 * A valid hash of a password nobody knows (its random input was discarded), with the
 * same parameters as real hashes: checking against it costs the same time.
 */
export const DUMMY_PASSWORD_HASH =
  'scrypt$16384$8$5$dMqNo2cwFXV0G7ICAG0ebw==$wjTk+E1FAsr5uvMp3lNmTlRxTrAPdTCq6c2CffLcqa0=';

/**
 * Login check that spends the same time whether or not the user exists: with no stored
 * hash it verifies against DUMMY_PASSWORD_HASH and always answers false.
 */
export async function verifyPasswordOrDummy(pw: string, stored: string | undefined): Promise<boolean> {
  const ok = await verifyPassword(pw, stored ?? DUMMY_PASSWORD_HASH);
  return stored !== undefined && ok;
}

// No 0/O, 1/l/I: the generated first password is read off a terminal and typed.
const PASSWORD_ALPHABET = 'abcdefghijkmnopqrstuvwxyzABCDEFGHJKLMNPQRSTUVWXYZ23456789';

/** A random password of `length` characters (about 5.8 bits each). */
export function randomPassword(length = 20): string {
  let out = '';
  for (let i = 0; i < length; i++) out += PASSWORD_ALPHABET[randomInt(PASSWORD_ALPHABET.length)];
  return out;
}
