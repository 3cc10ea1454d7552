// The account API listener (--api-port, default 9899) on the main thread: login and
// tokens, Bearer-guarded projects and account endpoints, and whatever other parts mount
// on the same port (dashboard, Bearer-authenticated reporting).
import type { Config } from '../base/config.ts';
import { Router, listen, type Listener } from '../http/router.ts';
import type { TlsCredentials } from '../http/tls.ts';
import { log } from '../base/log.ts';
import type { Store } from '../store/db.ts';
import { HOUR_MS } from '../base/time.ts';
import { AccessTokens } from './access-tokens.ts';
import { mountAccountRoutes } from './account-routes.ts';
import { mountAuthRoutes } from './auth-routes.ts';
import { loadOrCreateJwtKey } from './jwt-key.ts';
import { LoginThrottle } from './login-throttle.ts';
import { mountProjectRoutes } from './project-routes.ts';
import { mountPolicyRoutes } from './policy-routes.ts';
import type { PolicyService } from '../policy/service.ts';
import { SessionGuard } from './session-guard.ts';
import { pruneSessions } from './sessions.ts';

/** Path families where every request needs a valid Bearer token, matched or not. */
export const BEARER_PREFIXES = ['/v1/project', '/v1/account', '/v1/policy'] as const;
const PRUNE_INTERVAL_MS = HOUR_MS;

export interface AccountApiOptions {
  config: Config;
  store: Store;
  /** Adds routes of other parts to this port; `sessions` authenticates Bearer tokens. */
  mount?: (router: Router, sessions: SessionGuard) => void;
  /** Called after a key rotation so the lookup threads learn the new key at once. */
  /** Resolves once the lookup threads have the new keys. */
  onKeysChanged?: () => Promise<void>;
  /** Customers' compiled policies (null: changes reach the store only, e.g. in tests of the API alone). */
  policies?: PolicyService | null;
  /** Serve HTTPS with this pair (--tls-cert, --tls-key). */
  tls?: TlsCredentials | null;
}

export async function startAccountApi(opts: AccountApiOptions): Promise<Listener & { sessions: SessionGuard }> {
  const { config, store } = opts;
  const tokens = new AccessTokens(loadOrCreateJwtKey(config.dataDir), config.accessTokenTtl);
  const sessions = new SessionGuard(store, tokens);

  const router = new Router();
  for (const prefix of BEARER_PREFIXES) router.guard(prefix, (ctx) => sessions.requireSession(ctx).then(() => undefined));
  mountAuthRoutes(router, { store, config, tokens, throttle: new LoginThrottle() });
  mountProjectRoutes(router, { store, sessions });
  mountAccountRoutes(router, { store, sessions, defaultGraceSeconds: config.keyGrace, onKeysChanged: opts.onKeysChanged });
  mountPolicyRoutes(router, { store, sessions, policies: opts.policies ?? null });
  opts.mount?.(router, sessions);

  const prune = () => pruneSessions(store, config.accessTokenTtl).catch((e: Error) => log.error({ err: e.message }, 'session cleanup failed'));
  await prune();
  const timer = setInterval(() => void prune(), PRUNE_INTERVAL_MS);
  timer.unref();

  let listener: Listener;
  try {
    listener = await listen(router, config.host, config.apiPort, 'account API', opts.tls);
  } catch (e) {
    clearInterval(timer);
    throw e;
  }
  log.info({ host: config.host, port: listener.port, tls: !!opts.tls }, 'account API listening');
  return {
    ...listener,
    sessions,
    close: async () => {
      clearInterval(timer);
      await listener.close();
    },
  };
}
