// The signed-in session. Both tokens live in this object's memory only (never in
// localStorage/sessionStorage): a script injected into the page could read storage, and a
// reload signing the user out is the accepted price. The access token is refreshed before
// it expires; a 400 invalid_session triggers one refresh and one retry; a refresh token
// the server refuses ends the session with a message.

export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    /** The request field a 422 is about, when the API names one. */
    readonly field?: string,
    readonly retryAfter?: number,
  ) {
    super(message);
    this.name = 'ApiError';
  }
}

interface TokenResponse {
  access_token: string;
  refresh_token: string;
  expires_in?: number;
}

const NETWORK_MESSAGE = 'Cannot reach the ivtd server. Check that it is running, then try again.';
export const SESSION_ENDED = 'Your session has expired or was signed out elsewhere. Please sign in again.';

async function errorOf(res: Response): Promise<ApiError> {
  let code = `http_${res.status}`;
  let message = `The server answered ${res.status} ${res.statusText}.`;
  let field: string | undefined;
  try {
    const body = (await res.json()) as { error?: unknown; message?: unknown; field?: unknown };
    if (typeof body.error === 'string') code = body.error;
    if (typeof body.message === 'string' && body.message) message = body.message;
    if (typeof body.field === 'string') field = body.field;
  } catch {
    // not JSON: keep the status line
  }
  const ra = Number(res.headers.get('retry-after'));
  return new ApiError(res.status, code, message, field, Number.isFinite(ra) && ra > 0 ? ra : undefined);
}

async function send(url: string, init: RequestInit): Promise<Response> {
  try {
    return await fetch(url, { ...init, credentials: 'omit', cache: 'no-store' });
  } catch {
    throw new ApiError(0, 'network', NETWORK_MESSAGE);
  }
}

/** When to refresh: a quarter of the lifetime (at most a minute) before expiry. */
export function refreshDelayMs(expiresInSeconds: number): number {
  const life = expiresInSeconds * 1000;
  return Math.max(250, life - Math.min(60_000, life / 4));
}

export class Session {
  private access: string | null = null;
  private refreshToken: string | null = null;
  private timer: ReturnType<typeof setTimeout> | undefined;
  private inflight: Promise<boolean> | null = null;
  /** Called once when the session ends without the user signing out (refresh refused). */
  onEnded: (message: string) => void = () => undefined;

  get active(): boolean {
    return this.access !== null;
  }

  async login(username: string, password: string): Promise<void> {
    const res = await send('/login', {
      method: 'POST',
      headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ username, password }).toString(),
    });
    if (!res.ok) {
      const e = await errorOf(res);
      if (e.status === 429) {
        throw new ApiError(429, e.code, `Too many sign-in attempts. Try again${e.retryAfter ? ` in ${e.retryAfter} s` : ' later'}.`);
      }
      throw e;
    }
    this.take((await res.json()) as TokenResponse);
  }

  /** Exchanges the refresh token (single flight). False when the server refused it: the session is over. */
  refresh(): Promise<boolean> {
    this.inflight ??= this.doRefresh().finally(() => {
      this.inflight = null;
    });
    return this.inflight;
  }

  private async doRefresh(): Promise<boolean> {
    const token = this.refreshToken;
    if (!token) return false;
    let res: Response;
    try {
      res = await send('/refresh_token', {
        method: 'POST',
        headers: { 'Content-Type': 'application/json' },
        body: JSON.stringify({ refresh_token: token }),
      });
    } catch (e) {
      // Server unreachable: the session may still be good; try again shortly.
      this.schedule(5);
      throw e;
    }
    if (res.status >= 500 || res.status === 429) {
      this.schedule(5);
      throw await errorOf(res);
    }
    if (!res.ok) {
      this.end(SESSION_ENDED);
      return false;
    }
    this.take((await res.json()) as TokenResponse);
    return true;
  }

  /** Revokes the refresh token on the server and forgets both tokens. */
  async logout(): Promise<void> {
    const token = this.refreshToken;
    this.clear();
    if (!token) return;
    await send('/logout', {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ refresh_token: token }),
    }).catch(() => undefined);
  }

  /** A Bearer-authenticated JSON call; returns the parsed body (undefined for 204). */
  async request<T>(method: string, path: string, body?: unknown): Promise<T> {
    let res = await this.call(method, path, body);
    if (res.status === 400 || res.status === 401) {
      const e = await errorOf(res.clone());
      if (e.code === 'invalid_session' || res.status === 401) {
        if (!(await this.refresh())) throw new ApiError(400, 'invalid_session', SESSION_ENDED);
        res = await this.call(method, path, body);
      }
    }
    if (!res.ok) {
      const e = await errorOf(res);
      if (e.code === 'invalid_session') this.end(SESSION_ENDED);
      throw e;
    }
    if (res.status === 204) return undefined as T;
    return (await res.json()) as T;
  }

  private call(method: string, path: string, body: unknown): Promise<Response> {
    if (!this.access) return Promise.reject(new ApiError(400, 'invalid_session', SESSION_ENDED));
    const headers: Record<string, string> = { Authorization: `Bearer ${this.access}`, Accept: 'application/json' };
    if (body !== undefined) headers['Content-Type'] = 'application/json';
    return send(path, { method, headers, body: body === undefined ? null : JSON.stringify(body) });
  }

  private take(t: TokenResponse): void {
    if (typeof t.access_token !== 'string' || typeof t.refresh_token !== 'string') {
      throw new ApiError(500, 'bad_response', 'The server sent an unexpected token response.');
    }
    this.access = t.access_token;
    this.refreshToken = t.refresh_token;
    this.schedule(refreshDelayMs(t.expires_in ?? 900) / 1000);
  }

  private schedule(seconds: number): void {
    clearTimeout(this.timer);
    this.timer = setTimeout(() => {
      this.refresh().catch(() => undefined);
    }, seconds * 1000);
  }

  private clear(): void {
    clearTimeout(this.timer);
    this.access = null;
    this.refreshToken = null;
  }

  private end(message: string): void {
    const wasActive = this.active;
    this.clear();
    if (wasActive) this.onEnded(message);
  }
}
