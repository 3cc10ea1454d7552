// The scoring model: request signals and history facts → four component probabilities,
// one combined score, a band, a confidence and reason codes. Pure and synchronous.
// docs/scoring.md explains every number below; a test keeps the two in step.
import type { Band, TransactionClass } from '../enums.ts';
import type { HistoryFacts } from './history.ts';
import { HISTORY_ROWS, SIGNAL_ROWS, type PolicyReason } from './reasons.ts';
import { compileScoreKernel, type ScoreKernel } from './score-kernel.ts';

export interface ScoreInputs {
  // hard, deterministic
  ipBogon: boolean;
  uaMalformed: boolean;
  ifaMalformed: boolean;
  ifaKnownBad: boolean;
  deviceImpossible: boolean;
  // GIVT
  declaredBot: boolean;
  /** A declared bot naming an AI agent or AI crawler (crawlers.ts, data/ai-agents.txt); declaredBot is then false. */
  aiAgent: boolean;
  /**
   * A declared bot naming an uptime monitor (Pingdom, UptimeRobot, Datadog Synthetics…) from
   * that monitor's published probe addresses (bot-services.ts); declaredBot and aiAgent are then false.
   */
  monitor: boolean;
  automation: boolean;
  ipHosting: boolean;
  // SIVT
  ipVpn: boolean;
  ipProxy: boolean;
  ipTor: boolean;
  /** An iCloud Private Relay egress (published ranges): real users behind it, so weak. */
  ipRelay: boolean;
  /**
   * A UA claiming a crawler whose operator publishes its addresses, from outside them
   * (crawlers.ts): a bot masquerading as that crawler; declaredBot and aiAgent are then false.
   */
  crawlerSpoofed: boolean;
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
  /** The app bundle ID is of another store's form than the UA's OS, or of none (app-bundle.ts). */
  appBundleMalformed: boolean;
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

// The weights, history terms and everything else per reason code live in one table,
// reasons.ts; these are views of it, kept here for the callers that read them.
export { GIVT_WEIGHTS, HARD_WEIGHTS, HISTORY_TERMS, HUMAN_LOOKUPS_MAX_PER_10S, HUMAN_LOOKUPS_MAX_PER_MIN, HUMAN_LOOKUPS_MAX_PER_SEC, IP_ACTIVITY_MIN_USERS, POLICY_REASONS, SIVT_WEIGHTS, ipRatePerUser } from './reasons.ts';
export type { HistoryTerm, PolicyReason } from './reasons.ts';

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

function round4(x: number): number {
  return Math.round(x * 10_000) / 10_000;
}

export function bandOf(score: number, medium = BAND_MEDIUM_MIN, high = BAND_HIGH_MIN): Band {
  return score >= high ? 'high' : score >= medium ? 'medium' : 'low';
}

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

// score()'s components and reasons: code generated from the table of reasons (score-kernel.ts),
// on the first score() (not at import: the dashboard's bundle imports this module for its
// band constants, and its Content-Security-Policy forbids generating code).
let KERNEL: ScoreKernel | null = null;
const P = new Float64Array(4);

export function score(i: ScoreInputs): ScoreResult {
  const reasons: string[] = [];
  // Each component is a noisy-OR of its fired signals: 1 − Π(1 − w).
  const kernel = KERNEL ?? (KERNEL = compileScoreKernel(SIGNAL_ROWS, HISTORY_ROWS, HIST_REASON_MIN));
  const leading = kernel(i, reasons, P);
  const pHard = P[0]!;
  const pGivt = P[1]!;
  const pSivt = P[2]!;
  const pHist = P[3]!;

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
    leading,
  };
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
 * Reporting rule: a transaction the customer's own deny list decided is `policy`, neither
 * GIVT nor SIVT (its own choice must not inflate its MRC figures); otherwise it is invalid
 * when its band is `high`, GIVT when the deterministic side (hard or GIVT) is at least as
 * strong as the inferred side (SIVT or history), otherwise SIVT.
 */
export function classifyTransaction(r: ScoreResult): TransactionClass {
  if (r.leading === 'denylisted') return 'policy';
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
