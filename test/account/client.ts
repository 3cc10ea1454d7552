// A small HTTP client for the account API tests: real requests through fetch. Every answer
// is checked against the OpenAPI descriptions (test/helpers/openapi.ts) unless `unchecked`.
import { conformsToOpenApi } from '../helpers/openapi.ts';

export interface Reply {
  status: number;
  headers: Headers;
  /** Parsed JSON body, or the raw text when it is not JSON, or null when empty. */
  body: any;
}

export interface RequestOptions {
  token?: string;
  json?: unknown;
  form?: Record<string, string>;
  /** A raw body sent as is (with `headers` choosing its content type). */
  raw?: string;
  headers?: Record<string, string>;
  /** Skip the OpenAPI check (a request broken on purpose below HTTP's level). */
  unchecked?: boolean;
}

export async function call(base: string, method: string, path: string, opts: RequestOptions = {}): Promise<Reply> {
  const headers: Record<string, string> = { ...opts.headers };
  let body: string | undefined;
  if (opts.token !== undefined) headers.authorization = `Bearer ${opts.token}`;
  if (opts.json !== undefined) {
    headers['content-type'] ??= 'application/json';
    body = JSON.stringify(opts.json);
  } else if (opts.form !== undefined) {
    headers['content-type'] ??= 'application/x-www-form-urlencoded';
    body = new URLSearchParams(opts.form).toString();
  } else if (opts.raw !== undefined) {
    body = opts.raw;
  }
  const res = await fetch(base + path, { method, headers, body });
  const text = await res.text();
  let parsed: unknown = null;
  if (text !== '') {
    try {
      parsed = JSON.parse(text);
    } catch {
      parsed = text;
    }
  }
  if (!opts.unchecked) conformsToOpenApi({ method, path, status: res.status, contentType: res.headers.get('content-type') ?? '', body: parsed });
  return { status: res.status, headers: res.headers, body: parsed };
}

export interface Tokens {
  access_token: string;
  refresh_token: string;
  token_type: string;
  expires_in: number;
}

/** Logs in and returns the tokens; throws when the login is refused. */
export async function login(base: string, username: string, password: string): Promise<Tokens> {
  const r = await call(base, 'POST', '/login', { form: { username, password } });
  if (r.status !== 200) throw new Error(`login failed: ${r.status} ${JSON.stringify(r.body)}`);
  return r.body as Tokens;
}

export const INVALID_SESSION = { error: 'invalid_session', message: 'Invalid session! Please try again.' };

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
