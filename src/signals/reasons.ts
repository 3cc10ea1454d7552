// The table of reasons: one row per reason code, everything the code means in one place —
// the score component it counts in, its weight (a request signal) or its history term, the
// input that fires it, its category (category.ts), its MRC class and the OpenRTB no-bid
// reason it implies. score.ts loops over it; category.ts, the OpenRTB answer and the admin
// explain read it; docs/scoring.md is checked against it (test/signals/score.test.ts,
// test/signals/category.test.ts). Adding a signal is one row here (and its input flag).
//
// Row order is the order reasons are named in a lookup's `reasons` (component by component),
// and the first of equal contributions leads: keep it.
import type { Category } from './category-list.ts';
import type { HistoryFacts } from './history.ts';
import type { ScoreInputs } from './score-inputs.ts';

/** The score component a reason counts in; `policy` is a customer's own allow/deny list. */
export type Component = 'hard' | 'givt' | 'sivt' | 'hist' | 'policy';

/**
 * The MRC class of a reason, as classifyTransaction (score.ts) counts it: the hard and GIVT
 * components are GIVT, the SIVT and history components SIVT, and the customer's own
 * allow/deny list is neither (POLICY).
 */
export type ReasonClass = 'GIVT' | 'SIVT' | 'POLICY';

/** OpenRTB 2.x no-bid reasons (`nbr`) an invalid transaction can imply. */
export const NBR_SPIDER = 3;
export const NBR_NON_HUMAN = 4;
export const NBR_CLOUD_PROXY = 5;
/** The seller is not authorised by the publisher's ads.txt / app-ads.txt. */
export const NBR_ADS_TXT_VIOLATION = 12;
export const NBR_SCHAIN_INCOMPLETE = 16;
/** A supply-chain node the customer's policy blocks (a seller deny entry; see noBidReason). */
export const NBR_SCHAIN_NODE_BLOCKED = 17;
export type NoBidReason = typeof NBR_SPIDER | typeof NBR_NON_HUMAN | typeof NBR_CLOUD_PROXY | typeof NBR_ADS_TXT_VIOLATION | typeof NBR_SCHAIN_INCOMPLETE;

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

/**
 * Most lookups one person causes within a second and within ten seconds (docs/scoring.md,
 * "Activity"): one heavy page (10 slots, each asked by up to 5 exchanges) with room to
 * spare; three such pages. The burst terms' floors: machine speed is caught within seconds.
 */
export const HUMAN_LOOKUPS_MAX_PER_SEC = 60;
export const HUMAN_LOOKUPS_MAX_PER_10S = 150;

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

/** History facts computed from the others, by name. */
export const HISTORY_FACT_FUNCTIONS = { ipRatePerUser } as const;

interface RowBase {
  readonly code: string;
  readonly category: Category;
  readonly class: ReasonClass;
  /** The no-bid reason when this reason leads an invalid transaction. */
  readonly nbr: NoBidReason;
}

/** A ScoreInputs flag, or its negation. */
export type Flag = Exclude<keyof ScoreInputs, 'history'>;
export type FlagTest = Flag | `!${Flag}`;

/** A request signal: fires when every test of `when` holds, with probability `weight` of invalid traffic. */
export interface SignalRow extends RowBase {
  readonly component: 'hard' | 'givt' | 'sivt';
  readonly weight: number;
  readonly when: readonly FlagTest[];
}

/** A history fact: a HistoryFacts field, or a fact derived from them (HISTORY_FACT_FUNCTIONS). */
export type HistoryFact = keyof HistoryFacts | keyof typeof HISTORY_FACT_FUNCTIONS;

/** A history term: weight × sat(fact − floor), times the `share` field when given (the bot-history terms). */
export interface HistoryRow extends RowBase {
  readonly component: 'hist';
  readonly term: HistoryTerm;
  readonly fact: HistoryFact;
  readonly share?: keyof HistoryFacts;
}

/** A customer's own verdict (src/policy): applied after the score (applyPolicy). */
export interface PolicyRow extends RowBase {
  readonly component: 'policy';
}

export type ReasonRow = SignalRow | HistoryRow | PolicyRow;

const H = HUMAN_LOOKUPS_MAX_PER_MIN;
const S = NBR_SPIDER;
const N = NBR_NON_HUMAN;
const C = NBR_CLOUD_PROXY;

/** Every reason code, one row each. */
export const REASONS = [
  // ---- hard, deterministic: each is near-certain invalid traffic on its own
  { code: 'ip_bogon', component: 'hard', weight: 0.95, when: ['ipBogon'], category: 'non_routable_ip', class: 'GIVT', nbr: N },
  { code: 'ua_malformed', component: 'hard', weight: 0.95, when: ['uaMalformed'], category: 'malformed_ua', class: 'GIVT', nbr: N },
  { code: 'ifa_known_bad', component: 'hard', weight: 0.97, when: ['ifaKnownBad'], category: 'known_bad_device', class: 'GIVT', nbr: N },
  { code: 'ifa_malformed', component: 'hard', weight: 0.9, when: ['ifaMalformed'], category: 'known_bad_device', class: 'GIVT', nbr: N },
  { code: 'device_impossible', component: 'hard', weight: 0.9, when: ['deviceImpossible'], category: 'device_spoofing', class: 'GIVT', nbr: N },
  // ---- general IVT: declared or trivially detectable automation, datacenter origin. Known
  // data-centre traffic is GIVT on its own (MRC's floor): asn_hosting alone is `high`; a
  // customer allows its own proxy or SSAI ranges through its policy.
  { code: 'ua_declared_bot', component: 'givt', weight: 0.98, when: ['declaredBot'], category: 'declared_crawler', class: 'GIVT', nbr: S },
  { code: 'ua_ai_agent', component: 'givt', weight: 0.98, when: ['aiAgent'], category: 'ai_agent', class: 'GIVT', nbr: S },
  { code: 'ua_monitor', component: 'givt', weight: 0.98, when: ['monitor'], category: 'monitoring', class: 'GIVT', nbr: S },
  { code: 'ua_headless', component: 'givt', weight: 0.95, when: ['automation'], category: 'automation', class: 'GIVT', nbr: N },
  { code: 'asn_hosting', component: 'givt', weight: 0.75, when: ['ipHosting'], category: 'data_center', class: 'GIVT', nbr: C },
  // ---- sophisticated IVT: anonymised origin, spoofed or inconsistent identity, weak supply path
  // A UA that claims a crawler or monitor whose operator publishes its addresses, from elsewhere.
  { code: 'ua_crawler_spoofed', component: 'sivt', weight: 0.95, when: ['crawlerSpoofed'], category: 'device_spoofing', class: 'SIVT', nbr: N },
  { code: 'ip_tor', component: 'sivt', weight: 0.8, when: ['ipTor'], category: 'anonymizing_proxy', class: 'SIVT', nbr: C },
  { code: 'ip_proxy', component: 'sivt', weight: 0.55, when: ['ipProxy'], category: 'anonymizing_proxy', class: 'SIVT', nbr: C },
  { code: 'ip_vpn', component: 'sivt', weight: 0.5, when: ['ipVpn'], category: 'anonymizing_proxy', class: 'SIVT', nbr: C },
  { code: 'ip_relay', component: 'sivt', weight: 0.1, when: ['ipRelay'], category: 'anonymizing_proxy', class: 'SIVT', nbr: C },
  { code: 'ua_inconsistent', component: 'sivt', weight: 0.5, when: ['uaInconsistent'], category: 'device_spoofing', class: 'SIVT', nbr: N },
  { code: 'sua_mismatch', component: 'sivt', weight: 0.5, when: ['suaMismatch'], category: 'device_spoofing', class: 'SIVT', nbr: N },
  // A declared device-ID type the device cannot have (rida off Roku, idfa off Apple…).
  { code: 'ifa_type_mismatch', component: 'sivt', weight: 0.5, when: ['ifaTypeMismatch'], category: 'device_spoofing', class: 'SIVT', nbr: N },
  // A stitched (server-side) impression from a data centre or a server library: the SSAI spoof.
  { code: 'ssai_spoof', component: 'sivt', weight: 0.75, when: ['ssaiSpoof'], category: 'device_spoofing', class: 'SIVT', nbr: N },
  { code: 'geo_mismatch', component: 'sivt', weight: 0.25, when: ['geoMismatch'], category: 'geo_mismatch', class: 'SIVT', nbr: N },
  // An unparseable chain says nothing about verification or completeness; no chain says nothing.
  { code: 'schain_invalid', component: 'sivt', weight: 0.35, when: ['schainPresent', '!schainValid'], category: 'supply_chain', class: 'SIVT', nbr: N },
  { code: 'schain_unverified', component: 'sivt', weight: 0.2, when: ['schainPresent', 'schainValid', '!schainVerified'], category: 'supply_chain', class: 'SIVT', nbr: N },
  { code: 'schain_incomplete', component: 'sivt', weight: 0.1, when: ['schainPresent', 'schainValid', '!schainComplete'], category: 'supply_chain', class: 'SIVT', nbr: NBR_SCHAIN_INCOMPLETE },
  { code: 'seller_unauthorized', component: 'sivt', weight: 0.4, when: ['sellerUnauthorized'], category: 'supply_chain', class: 'SIVT', nbr: NBR_ADS_TXT_VIOLATION },
  // Weak alone: broken integrations send such IDs too.
  { code: 'app_bundle_malformed', component: 'sivt', weight: 0.2, when: ['appBundleMalformed'], category: 'supply_chain', class: 'SIVT', nbr: N },
  { code: 'ifa_zero', component: 'sivt', weight: 0.1, when: ['zeroIfa'], category: 'known_bad_device', class: 'SIVT', nbr: N },
  // ---- history. Per IP: kept low because carrier NAT puts many real users behind one address.
  { code: 'ip_velocity', component: 'hist', term: { weight: 0.3, floor: 120, half: 600 }, fact: 'ipRate', category: 'activity', class: 'SIVT', nbr: N },
  { code: 'ip_many_uas', component: 'hist', term: { weight: 0.25, floor: 8, half: 24 }, fact: 'ipDistinctUas', category: 'activity', class: 'SIVT', nbr: N },
  { code: 'ip_many_uids', component: 'hist', term: { weight: 0.15, floor: 16, half: 32 }, fact: 'ipDistinctUids', category: 'activity', class: 'SIVT', nbr: N },
  // Per uid / IFA: one person, so volume and hopping are telling.
  { code: 'uid_velocity', component: 'hist', term: { weight: 0.5, floor: 60, half: 120 }, fact: 'uidRate', category: 'activity', class: 'SIVT', nbr: N },
  { code: 'uid_ip_hopping', component: 'hist', term: { weight: 0.55, floor: 2, half: 4 }, fact: 'uidDistinctIps', category: 'activity', class: 'SIVT', nbr: N },
  { code: 'uid_many_uas', component: 'hist', term: { weight: 0.6, floor: 2, half: 2 }, fact: 'uidDistinctUas', category: 'activity', class: 'SIVT', nbr: N },
  { code: 'ifa_velocity', component: 'hist', term: { weight: 0.5, floor: 60, half: 120 }, fact: 'ifaRate', category: 'activity', class: 'SIVT', nbr: N },
  { code: 'ifa_ip_hopping', component: 'hist', term: { weight: 0.5, floor: 2, half: 4 }, fact: 'ifaDistinctIps', category: 'activity', class: 'SIVT', nbr: N },
  // Past invalid share on this host, gated by evidence (decayed lookups seen).
  { code: 'ip_bot_history', component: 'hist', term: { weight: 0.85, floor: 5, half: 20 }, fact: 'ipSeen', share: 'ipBotShare', category: 'activity', class: 'SIVT', nbr: N },
  { code: 'uid_bot_history', component: 'hist', term: { weight: 0.85, floor: 5, half: 20 }, fact: 'uidSeen', share: 'uidBotShare', category: 'activity', class: 'SIVT', nbr: N },
  { code: 'ifa_bot_history', component: 'hist', term: { weight: 0.85, floor: 5, half: 20 }, fact: 'ifaSeen', share: 'ifaBotShare', category: 'activity', class: 'SIVT', nbr: N },
  // Activity beyond what one person can produce (docs/scoring.md, "Activity"): nothing up
  // to HUMAN_LOOKUPS_MAX_PER_MIN, `high` alone from about 2 000 lookups/min (6.7 × it).
  { code: 'uid_activity_excessive', component: 'hist', term: { weight: 0.95, floor: H, half: 2 * H }, fact: 'uidRate', category: 'activity', class: 'SIVT', nbr: N },
  { code: 'ifa_activity_excessive', component: 'hist', term: { weight: 0.95, floor: H, half: 2 * H }, fact: 'ifaRate', category: 'activity', class: 'SIVT', nbr: N },
  // Per IP, normalised by its distinct users (never by its raw rate: carrier NAT).
  { code: 'ip_activity_excessive', component: 'hist', term: { weight: 0.95, floor: H, half: 2 * H }, fact: 'ipRatePerUser', category: 'activity', class: 'SIVT', nbr: N },
  // Bursts beyond what one person can produce within a second or ten (docs/scoring.md,
  // "Activity"): half the weight at twice the bound, `high` alone from about 3.8 × it.
  { code: 'uid_burst_second', component: 'hist', term: { weight: 0.95, floor: HUMAN_LOOKUPS_MAX_PER_SEC, half: HUMAN_LOOKUPS_MAX_PER_SEC }, fact: 'uidBurst1s', category: 'activity', class: 'SIVT', nbr: N },
  { code: 'uid_burst_ten_seconds', component: 'hist', term: { weight: 0.95, floor: HUMAN_LOOKUPS_MAX_PER_10S, half: HUMAN_LOOKUPS_MAX_PER_10S }, fact: 'uidBurst10s', category: 'activity', class: 'SIVT', nbr: N },
  { code: 'ifa_burst_second', component: 'hist', term: { weight: 0.95, floor: HUMAN_LOOKUPS_MAX_PER_SEC, half: HUMAN_LOOKUPS_MAX_PER_SEC }, fact: 'ifaBurst1s', category: 'activity', class: 'SIVT', nbr: N },
  { code: 'ifa_burst_ten_seconds', component: 'hist', term: { weight: 0.95, floor: HUMAN_LOOKUPS_MAX_PER_10S, half: HUMAN_LOOKUPS_MAX_PER_10S }, fact: 'ifaBurst10s', category: 'activity', class: 'SIVT', nbr: N },
  // ---- a customer's own policy: the verdict is the customer's, not the model's. Only
  // `allowlisted` has category `none`: an allowed transaction is valid, so it never leads an invalid one.
  { code: 'allowlisted', component: 'policy', category: 'none', class: 'POLICY', nbr: N },
  { code: 'denylisted', component: 'policy', category: 'denylisted', class: 'POLICY', nbr: N },
] as const satisfies readonly ReasonRow[];

export type ReasonCode = (typeof REASONS)[number]['code'];
type CodeOf<K extends Component> = Extract<(typeof REASONS)[number], { component: K }>['code'];

/** The request-signal rows, in firing order (what score() loops over). */
export const SIGNAL_ROWS: readonly SignalRow[] = REASONS.filter((r): r is Extract<(typeof REASONS)[number], SignalRow> => r.component !== 'hist' && r.component !== 'policy');
/** The history rows, in firing order. */
export const HISTORY_ROWS: readonly HistoryRow[] = REASONS.filter((r): r is Extract<(typeof REASONS)[number], { component: 'hist' }> => r.component === 'hist');

/** The row of a code, or undefined for a code that does not exist. */
export const REASON_BY_CODE: ReadonlyMap<string, ReasonRow> = new Map(REASONS.map((r) => [r.code, r]));

/** What docs/scoring.md's `input` column says for a signal row: `a` and not `b`. */
export function inputText(row: SignalRow): string {
  return row.when.map((t) => (t.startsWith('!') ? `not \`${t.slice(1)}\`` : `\`${t}\``)).join(' and ');
}

function weightsOf<K extends 'hard' | 'givt' | 'sivt'>(component: K): Readonly<Record<CodeOf<K>, number>> {
  return Object.fromEntries(SIGNAL_ROWS.filter((r) => r.component === component).map((r) => [r.code, r.weight])) as Record<CodeOf<K>, number>;
}

/** The weights of each request-signal component, by code (views of REASONS). */
export const HARD_WEIGHTS = weightsOf('hard');
export const GIVT_WEIGHTS = weightsOf('givt');
export const SIVT_WEIGHTS = weightsOf('sivt');
/** The history terms, by code (a view of REASONS). */
export const HISTORY_TERMS: Readonly<Record<CodeOf<'hist'>, HistoryTerm>> = Object.fromEntries(HISTORY_ROWS.map((r) => [r.code, r.term])) as Record<CodeOf<'hist'>, HistoryTerm>;
/** Reason codes a customer's own policy gives (src/policy). */
export const POLICY_REASONS = ['allowlisted', 'denylisted'] as const satisfies readonly CodeOf<'policy'>[];
export type PolicyReason = (typeof POLICY_REASONS)[number];
