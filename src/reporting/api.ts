// `GET /v1/report`: on the reporting port with HTTP Basic (customer ID : reporting key),
// and on the account port with the dashboard's Bearer session. Both answer from the same
// ReportEngine for the authenticated customer only.
import { HttpError } from '../base/errors.ts';
import { Router, listen, sendJson, type Ctx, type Listener } from '../http/router.ts';
import type { TlsCredentials } from '../http/tls.ts';
import { tooManyRequests } from '../http/throttle.ts';
import { log } from '../base/log.ts';
import type { Store } from '../store/db.ts';
import { verifyReportingKey } from '../store/api-keys.ts';
import type { ReportEngine } from './engine.ts';
import { RateLimiter } from './rate-limit.ts';
import { CALIBRATION_PATH, type CalibrationReport } from './calibration.ts';
import { mountOpenApi } from '../openapi/documents.ts';

export const REPORT_PATH = '/v1/report';
/** What the impression beacons found (docs/post-bid.md), same rules as REPORT_PATH. */
export const IMPRESSIONS_REPORT_PATH = '/v1/report/impressions';
export const BASIC_REALM = 'ivtd reporting';
/** Failed Basic logins per client IP: a burst of 10, then one more every 5 s. */
export const AUTH_FAILURE_BURST = 10;
export const AUTH_FAILURE_RATE = 0.2;

/** What the Bearer route needs of the account API's session guard. */
export interface SessionCheck {
  requireSession(ctx: Ctx): Promise<{ customer_id: string }>;
}

function tooMany(seconds: number, what: string): HttpError {
  return tooManyRequests(`Too many ${what}; retry in ${seconds} s.`, seconds);
}

const SEND_BASIC = 'Send HTTP Basic credentials: your customer ID as the username and your reporting API key as the password.';

/** What was wrong with credentials that were sent but refused: a pre-bid key, not a key at all, or no match. */
export function refusedCredentials(password: string): string {
  if (password.startsWith('ivp_')) return 'That is a pre-bid key (ivp_…): the reporting API takes your reporting key, which starts with ivr_ (the dashboard\'s Integrations page shows its prefix).';
  if (!password.startsWith('ivr_')) return 'The password is not a reporting key: reporting keys start with ivr_. Send your customer ID as the username and that key as the password.';
  return 'The customer ID and reporting key do not match a live key: check both (the customer ID, not the username), or rotate the key if it was revoked.';
}

function unauthorized(message = SEND_BASIC): HttpError {
  return new HttpError(
    'unauthorized',
    message,
    401,
    { 'WWW-Authenticate': `Basic realm="${BASIC_REALM}", charset="UTF-8"` },
  );
}

/** `Authorization: Basic base64(user:password)` → its two parts, or null. */
export function parseBasicAuth(header: string | undefined): { user: string; password: string } | null {
  const m = /^Basic +([A-Za-z0-9+/]+={0,2}) *$/i.exec(header ?? '');
  if (!m || m[1]!.length > 1024) return null;
  const text = Buffer.from(m[1]!, 'base64').toString('utf8');
  const i = text.indexOf(':');
  if (i <= 0) return null;
  return { user: text.slice(0, i), password: text.slice(i + 1) };
}

/** What answers a report route: the engines, and the calibration report. */
type Answerer = { run(customerId: string, params: URLSearchParams): Promise<unknown> };

async function answer(ctx: Ctx, engine: Answerer, limiter: RateLimiter | undefined, customerId: string): Promise<void> {
  const wait = limiter?.take(customerId) ?? 0;
  if (wait > 0) throw tooMany(wait, 'report requests for this customer');
  sendJson(ctx.res, 200, await engine.run(customerId, ctx.query));
}

/** The dashboard's route on the account port: Bearer session → that customer's report. */
export function mountReportRoute(
  router: Router,
  engine: ReportEngine,
  guard: SessionCheck,
  limiter?: RateLimiter,
  impressions?: ReportEngine<unknown>,
  calibration?: CalibrationReport,
): void {
  router.get(REPORT_PATH, async (ctx) => {
    const s = await guard.requireSession(ctx);
    await answer(ctx, engine, limiter, s.customer_id);
  });
  if (impressions) {
    router.get(IMPRESSIONS_REPORT_PATH, async (ctx) => {
      const s = await guard.requireSession(ctx);
      await answer(ctx, impressions, limiter, s.customer_id);
    });
  }
  if (calibration) {
    router.get(CALIBRATION_PATH, async (ctx) => {
      const s = await guard.requireSession(ctx);
      await answer(ctx, calibration, limiter, s.customer_id);
    });
  }
}

export interface ReportingApiOptions {
  host: string;
  port: number;
  store: Store;
  engine: ReportEngine;
  /** The impressions report (GET /v1/report/impressions); absent: 404 there. */
  impressions?: ReportEngine<unknown>;
  /** The calibration report (GET /v1/report/calibration); absent: 404 there. */
  calibration?: CalibrationReport;
  /** Per-customer token bucket (config.reportRate / config.reportBurst). */
  limiter: RateLimiter;
  /** Per-IP bucket of failed Basic logins. */
  authFailures?: RateLimiter;
  /** Serve HTTPS with this pair (--tls-cert, --tls-key). */
  tls?: TlsCredentials | null;
}

export function reportingRouter(opts: ReportingApiOptions): Router {
  const failures = opts.authFailures ?? new RateLimiter(AUTH_FAILURE_RATE, AUTH_FAILURE_BURST);
  const route = (engine: Answerer) => async (ctx: Ctx) => {
    const blocked = failures.peek(ctx.ip);
    if (blocked > 0) throw tooMany(blocked, 'failed logins from this address');
    const cred = parseBasicAuth(ctx.req.headers.authorization);
    if (!cred || !(await verifyReportingKey(opts.store, cred.user, cred.password))) {
      failures.take(ctx.ip);
      throw unauthorized(cred ? refusedCredentials(cred.password) : undefined);
    }
    await answer(ctx, engine, opts.limiter, cred.user);
  };
  const router = new Router().get(REPORT_PATH, route(opts.engine));
  if (opts.impressions) router.get(IMPRESSIONS_REPORT_PATH, route(opts.impressions));
  if (opts.calibration) router.get(CALIBRATION_PATH, route(opts.calibration));
  mountOpenApi(router, 'reporting');
  return router;
}

/** Starts the reporting listener (--reporting-port, default 9900). */
export async function startReportingApi(opts: ReportingApiOptions): Promise<Listener> {
  const listener = await listen(reportingRouter(opts), opts.host, opts.port, 'reporting API', opts.tls);
  log.info({ host: opts.host, port: listener.port, tls: !!opts.tls }, 'reporting API listening');
  return listener;
}
