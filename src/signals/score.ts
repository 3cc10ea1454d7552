// The scoring model: request signals and history facts → four component probabilities,
// one combined score, a band, a confidence and reason codes. Pure and synchronous.
// docs/scoring.md explains every number below; a test keeps the two in step.
import type { Band, TransactionClass } from '../enums.ts';
import type { HistoryFacts } from './history.ts';

export interface ScoreInputs {
  // hard, deterministic
  ipBogon: boolean;
  uaMalformed: boolean;
  ifaMalformed: boolean;
  ifaKnownBad: boolean;
  deviceImpossible: boolean;
  // GIVT
  declaredBot: boolean;
  automation: boolean;
  ipHosting: boolean;
  // SIVT
  ipVpn: boolean;
  ipProxy: boolean;
  ipTor: boolean;
  /** An iCloud Private Relay egress (published ranges): real users behind it, so weak. */
  ipRelay: boolean;
  uaInconsistent: boolean;
  /** An OpenRTB `device.sua` (client hints) contradicts the UA string (sua.ts). */
  suaMismatch: boolean;
  /** An OpenRTB `device.ifa_type` names another platform's device ID than the device's (ifa.ts). */
  ifaTypeMismatch: boolean;
  /** An OpenRTB imp stitched server-side (`ssai` 2, 3) from a data-centre IP or a server's HTTP-library UA. */
  ssaiSpoof: boolean;
  geoMismatch: boolean;
  schainPresent: boolean;
  schainValid: boolean;
  schainVerified: boolean;
  schainComplete: boolean;
  /** The publisher's ads.txt / app-ads.txt does not authorise the seller (unknown is false). */
  sellerUnauthorized: boolean;
  zeroIfa: boolean;
  // history
  history: HistoryFacts;
}

export interface ScoreResult {
  /** Component probabilities, each in [0,1], rounded to 4 decimals. */
  p_hard: number;
  p_givt: number;
  p_sivt: number;
  p_hist: number;
  score: number;
  band: Band;
  confidence: number;
  /** Reason codes of every signal that contributed, in component order. */
  reasons: string[];
  /** The reason that contributed most ('' when none did): the transaction's category (category.ts). */
  leading: string;
}

/** Hard, deterministic facts: each is near-certain invalid traffic on its own. */
export const HARD_WEIGHTS = {
  ip_bogon: 0.95,
  ua_malformed: 0.95,
  ifa_known_bad: 0.97,
  ifa_malformed: 0.9,
  device_impossible: 0.9,
} as const;

/** General IVT: declared or trivially detectable automation, datacenter origin. */
export const GIVT_WEIGHTS = {
  ua_declared_bot: 0.98,
  ua_headless: 0.95,
  asn_hosting: 0.6,
} as const;

/** Sophisticated IVT: anonymised origin, spoofed or inconsistent identity, weak supply path. */
export const SIVT_WEIGHTS = {
  ip_tor: 0.8,
  ip_proxy: 0.55,
  ip_vpn: 0.5,
  ua_inconsistent: 0.5,
  seller_unauthorized: 0.4,
  sua_mismatch: 0.5,
  ifa_type_mismatch: 0.5,
  ssai_spoof: 0.75,
  schain_invalid: 0.35,
  geo_mismatch: 0.25,
  schain_unverified: 0.2,
  schain_incomplete: 0.1,
  ip_relay: 0.1,
  ifa_zero: 0.1,
} as const;

/**
 * A history term contributes weight × sat(x − floor), sat(e) = e / (e + half) for e > 0:
 * nothing up to `floor`, half the weight at floor + half, approaching the weight beyond.
 * For the bot-history terms x is the evidence count and the result is scaled by the
 * bot share, so a share only counts once there is evidence behind it.
 */
export interface HistoryTerm {
  readonly weight: number;
  readonly floor: number;
  readonly half: number;
}

/** Most lookups per minute one person can cause (docs/scoring.md, "Activity"): the activity floors. */
export const HUMAN_LOOKUPS_MAX_PER_MIN = 300;

export const HISTORY_TERMS = {
  // Per IP: kept low because carrier NAT puts many real users behind one address.
  ip_velocity: { weight: 0.3, floor: 120, half: 600 },
  ip_many_uas: { weight: 0.25, floor: 8, half: 24 },
  ip_many_uids: { weight: 0.15, floor: 16, half: 32 },
  // Per uid / IFA: one person, so volume and hopping are telling.
  uid_velocity: { weight: 0.5, floor: 60, half: 120 },
  uid_ip_hopping: { weight: 0.55, floor: 2, half: 4 },
  uid_many_uas: { weight: 0.6, floor: 2, half: 2 },
  ifa_velocity: { weight: 0.5, floor: 60, half: 120 },
  ifa_ip_hopping: { weight: 0.5, floor: 2, half: 4 },
  // Past invalid share on this host, gated by evidence (decayed lookups seen).
  ip_bot_history: { weight: 0.85, floor: 5, half: 20 },
  uid_bot_history: { weight: 0.85, floor: 5, half: 20 },
  // Activity beyond what one person can produce (docs/scoring.md, "Activity"): nothing up
  // to HUMAN_LOOKUPS_MAX_PER_MIN, `high` alone from about 2 000 lookups/min (6.7 × it).
  uid_activity_excessive: { weight: 0.95, floor: HUMAN_LOOKUPS_MAX_PER_MIN, half: 2 * HUMAN_LOOKUPS_MAX_PER_MIN },
  ifa_activity_excessive: { weight: 0.95, floor: HUMAN_LOOKUPS_MAX_PER_MIN, half: 2 * HUMAN_LOOKUPS_MAX_PER_MIN },
  // Per IP, normalised by its distinct users (never by its raw rate: carrier NAT).
  ip_activity_excessive: { weight: 0.95, floor: HUMAN_LOOKUPS_MAX_PER_MIN, half: 2 * HUMAN_LOOKUPS_MAX_PER_MIN },
} as const satisfies Record<string, HistoryTerm>;

/** An IP's rate counts per user only once it shows at least this many distinct uids or UAs. */
export const IP_ACTIVITY_MIN_USERS = 16;

/**
 * An IP's lookups per minute per distinct user (the larger of its distinct uids and UAs),
 * 0 while it shows fewer than IP_ACTIVITY_MIN_USERS: a carrier NAT of many ordinary users
 * stays at a human rate however busy the address is.
 */
export function ipRatePerUser(h: HistoryFacts): number {
  const users = Math.max(h.ipDistinctUids, h.ipDistinctUas);
  return users >= IP_ACTIVITY_MIN_USERS ? h.ipRate / users : 0;
}

/** Score at which the band becomes `medium`. */
export const BAND_MEDIUM_MIN = 0.3;
/** Score at which the band becomes `high` (and the transaction counts as invalid). */
export const BAND_HIGH_MIN = 0.7;
/** A history term below this contribution is too small to name as a reason. */
export const HIST_REASON_MIN = 0.05;

/** Confidence from the always-present sources (IP reputation and UA parse). */
export const CONFIDENCE_BASE = 0.25;
/** Added when a supply chain was supplied and checked. */
export const CONFIDENCE_SCHAIN = 0.1;
/** Most confidence history can add, reached as ipSeen + uidSeen grows... */
export const CONFIDENCE_HISTORY_MAX = 0.65;
/** ...half of it at this much evidence. */
export const CONFIDENCE_HISTORY_HALF = 20;
/** A hard or GIVT component at least this high is decisive: confidence is at least that value. */
export const CONFIDENCE_DECISIVE_MIN = 0.9;

function sat(x: number, t: HistoryTerm): number {
  const e = x - t.floor;
  return e > 0 ? (t.weight * e) / (e + t.half) : 0;
}

function round4(x: number): number {
  return Math.round(x * 10_000) / 10_000;
}

export function bandOf(score: number, medium = BAND_MEDIUM_MIN, high = BAND_HIGH_MIN): Band {
  return score >= high ? 'high' : score >= medium ? 'medium' : 'low';
}

/** Reason codes a customer's own policy gives (src/policy): the verdict is the customer's, not the model's. */
export const POLICY_REASONS = ['allowlisted', 'denylisted'] as const;
export type PolicyReason = (typeof POLICY_REASONS)[number];

/**
 * A customer's policy applied to the model's result, in place: its thresholds set the band;
 * an allow match makes the answer score 0, band `low`, reason `allowlisted`; a deny match
 * score 1, band `high`, reason `denylisted` (leading, so the transaction's category is
 * `denylisted`). Confidence is 1 either way (the customer decided). The components stay
 * the model's evidence, and the model's reasons follow the policy's.
 */
export function applyPolicy(r: ScoreResult, decision: PolicyReason | null, medium: number, high: number): ScoreResult {
  if (decision === null) {
    r.band = bandOf(r.score, medium, high);
    return r;
  }
  r.reasons.unshift(decision);
  r.leading = decision;
  r.confidence = 1;
  if (decision === 'allowlisted') {
    r.score = 0;
    r.band = 'low';
  } else {
    r.score = 1;
    r.band = 'high';
  }
  return r;
}

export function score(i: ScoreInputs): ScoreResult {
  const reasons: string[] = [];
  leadCode = '';
  leadWeight = 0;
  // Each component is a noisy-OR: q is the probability that no fired signal is right.
  let q = 1;
  if (i.ipBogon) { q *= 1 - HARD_WEIGHTS.ip_bogon; fire(reasons, 'ip_bogon', HARD_WEIGHTS.ip_bogon); }
  if (i.uaMalformed) { q *= 1 - HARD_WEIGHTS.ua_malformed; fire(reasons, 'ua_malformed', HARD_WEIGHTS.ua_malformed); }
  if (i.ifaKnownBad) { q *= 1 - HARD_WEIGHTS.ifa_known_bad; fire(reasons, 'ifa_known_bad', HARD_WEIGHTS.ifa_known_bad); }
  if (i.ifaMalformed) { q *= 1 - HARD_WEIGHTS.ifa_malformed; fire(reasons, 'ifa_malformed', HARD_WEIGHTS.ifa_malformed); }
  if (i.deviceImpossible) { q *= 1 - HARD_WEIGHTS.device_impossible; fire(reasons, 'device_impossible', HARD_WEIGHTS.device_impossible); }
  const pHard = 1 - q;

  q = 1;
  if (i.declaredBot) { q *= 1 - GIVT_WEIGHTS.ua_declared_bot; fire(reasons, 'ua_declared_bot', GIVT_WEIGHTS.ua_declared_bot); }
  if (i.automation) { q *= 1 - GIVT_WEIGHTS.ua_headless; fire(reasons, 'ua_headless', GIVT_WEIGHTS.ua_headless); }
  if (i.ipHosting) { q *= 1 - GIVT_WEIGHTS.asn_hosting; fire(reasons, 'asn_hosting', GIVT_WEIGHTS.asn_hosting); }
  const pGivt = 1 - q;

  q = 1;
  if (i.ipTor) { q *= 1 - SIVT_WEIGHTS.ip_tor; fire(reasons, 'ip_tor', SIVT_WEIGHTS.ip_tor); }
  if (i.ipProxy) { q *= 1 - SIVT_WEIGHTS.ip_proxy; fire(reasons, 'ip_proxy', SIVT_WEIGHTS.ip_proxy); }
  if (i.ipVpn) { q *= 1 - SIVT_WEIGHTS.ip_vpn; fire(reasons, 'ip_vpn', SIVT_WEIGHTS.ip_vpn); }
  if (i.ipRelay) { q *= 1 - SIVT_WEIGHTS.ip_relay; fire(reasons, 'ip_relay', SIVT_WEIGHTS.ip_relay); }
  if (i.uaInconsistent) { q *= 1 - SIVT_WEIGHTS.ua_inconsistent; fire(reasons, 'ua_inconsistent', SIVT_WEIGHTS.ua_inconsistent); }
  if (i.suaMismatch) { q *= 1 - SIVT_WEIGHTS.sua_mismatch; fire(reasons, 'sua_mismatch', SIVT_WEIGHTS.sua_mismatch); }
  if (i.ifaTypeMismatch) { q *= 1 - SIVT_WEIGHTS.ifa_type_mismatch; fire(reasons, 'ifa_type_mismatch', SIVT_WEIGHTS.ifa_type_mismatch); }
  if (i.ssaiSpoof) { q *= 1 - SIVT_WEIGHTS.ssai_spoof; fire(reasons, 'ssai_spoof', SIVT_WEIGHTS.ssai_spoof); }
  if (i.geoMismatch) { q *= 1 - SIVT_WEIGHTS.geo_mismatch; fire(reasons, 'geo_mismatch', SIVT_WEIGHTS.geo_mismatch); }
  if (i.schainPresent) {
    // An unparseable chain says nothing about verification or completeness.
    if (!i.schainValid) { q *= 1 - SIVT_WEIGHTS.schain_invalid; fire(reasons, 'schain_invalid', SIVT_WEIGHTS.schain_invalid); }
    else {
      if (!i.schainVerified) { q *= 1 - SIVT_WEIGHTS.schain_unverified; fire(reasons, 'schain_unverified', SIVT_WEIGHTS.schain_unverified); }
      if (!i.schainComplete) { q *= 1 - SIVT_WEIGHTS.schain_incomplete; fire(reasons, 'schain_incomplete', SIVT_WEIGHTS.schain_incomplete); }
    }
  }
  if (i.sellerUnauthorized) { q *= 1 - SIVT_WEIGHTS.seller_unauthorized; fire(reasons, 'seller_unauthorized', SIVT_WEIGHTS.seller_unauthorized); }
  if (i.zeroIfa) { q *= 1 - SIVT_WEIGHTS.ifa_zero; fire(reasons, 'ifa_zero', SIVT_WEIGHTS.ifa_zero); }
  const pSivt = 1 - q;

  const h = i.history;
  const T = HISTORY_TERMS;
  q = 1;
  q = histTerm(q, sat(h.ipRate, T.ip_velocity), 'ip_velocity', reasons);
  q = histTerm(q, sat(h.ipDistinctUas, T.ip_many_uas), 'ip_many_uas', reasons);
  q = histTerm(q, sat(h.ipDistinctUids, T.ip_many_uids), 'ip_many_uids', reasons);
  q = histTerm(q, sat(h.uidRate, T.uid_velocity), 'uid_velocity', reasons);
  q = histTerm(q, sat(h.uidDistinctIps, T.uid_ip_hopping), 'uid_ip_hopping', reasons);
  q = histTerm(q, sat(h.uidDistinctUas, T.uid_many_uas), 'uid_many_uas', reasons);
  q = histTerm(q, sat(h.ifaRate, T.ifa_velocity), 'ifa_velocity', reasons);
  q = histTerm(q, sat(h.ifaDistinctIps, T.ifa_ip_hopping), 'ifa_ip_hopping', reasons);
  q = histTerm(q, h.ipBotShare * sat(h.ipSeen, T.ip_bot_history), 'ip_bot_history', reasons);
  q = histTerm(q, h.uidBotShare * sat(h.uidSeen, T.uid_bot_history), 'uid_bot_history', reasons);
  q = histTerm(q, sat(h.uidRate, T.uid_activity_excessive), 'uid_activity_excessive', reasons);
  q = histTerm(q, sat(h.ifaRate, T.ifa_activity_excessive), 'ifa_activity_excessive', reasons);
  q = histTerm(q, sat(ipRatePerUser(h), T.ip_activity_excessive), 'ip_activity_excessive', reasons);
  const pHist = 1 - q;

  const s = round4(1 - (1 - pHard) * (1 - pGivt) * (1 - pSivt) * (1 - pHist));
  return {
    p_hard: round4(pHard),
    p_givt: round4(pGivt),
    p_sivt: round4(pSivt),
    p_hist: round4(pHist),
    score: s,
    band: bandOf(s),
    confidence: round4(confidenceOf(i, Math.max(pHard, pGivt))),
    reasons,
    leading: leadCode,
  };
}

// The leading reason of the score() in progress: the signal that contributed most.
let leadCode = '';
let leadWeight = 0;

function fire(reasons: string[], code: string, weight: number): void {
  reasons.push(code);
  if (weight > leadWeight) {
    leadWeight = weight;
    leadCode = code;
  }
}

function histTerm(q: number, p: number, code: string, reasons: string[]): number {
  if (p >= HIST_REASON_MIN) fire(reasons, code, p);
  return q * (1 - p);
}

/**
 * How much the answer rests on: IP and UA are always consulted; a checked supply chain
 * and history evidence add to that; a decisive hard/GIVT fact needs nothing more.
 */
function confidenceOf(i: ScoreInputs, decisive: number): number {
  const n = i.history.ipSeen + i.history.uidSeen;
  let c = CONFIDENCE_BASE + (i.schainPresent ? CONFIDENCE_SCHAIN : 0) +
    (CONFIDENCE_HISTORY_MAX * n) / (n + CONFIDENCE_HISTORY_HALF);
  if (decisive >= CONFIDENCE_DECISIVE_MIN && decisive > c) c = decisive;
  return c > 1 ? 1 : c;
}

/**
 * Reporting rule: a transaction is invalid when its band is `high`; it is GIVT when the
 * deterministic side (hard or GIVT) is at least as strong as the inferred side (SIVT or
 * history), otherwise SIVT.
 */
export function classifyTransaction(r: ScoreResult): TransactionClass {
  if (r.band !== 'high') return 'valid';
  return Math.max(r.p_hard, r.p_givt) >= Math.max(r.p_sivt, r.p_hist) ? 'givt' : 'sivt';
}

/**
 * The outcome to feed History.recordOutcome: invalid when the request's own evidence
 * (hard, GIVT, SIVT — without p_hist) reaches the high band. Feeding the full verdict
 * back would let past history alone keep an IP or uid marked forever.
 */
export function outcomeForHistory(r: ScoreResult): boolean {
  return 1 - (1 - r.p_hard) * (1 - r.p_givt) * (1 - r.p_sivt) >= BAND_HIGH_MIN;
}
