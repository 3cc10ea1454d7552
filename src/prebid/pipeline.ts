// A lookup, start to end, all synchronous over memory:
//   1. parse     the raw query → a validated LookupRequest (and the customer its key names)
//   2. signals   → one LookupSignals object (gather.ts)
//   3. score     → ScoreResult (src/signals/score.ts)
//   4. serialize → the JSON answer (response.ts)
// then, on the lookup path only, the history learns the outcome and the transaction is
// counted for reporting. The admin explain runs steps 1-4 over the same state and data in
// 'peek' mode: it reads what the lookup threads have and writes nothing.
// One LookupEngine per lookup thread (and one on the main thread, for explain).
import { TUPLE_DIMENSIONS, type Band, type TransactionClass } from '../base/enums.ts';
import { errorJson, type ErrorAnswer } from '../base/errors.ts';
import { ThreadCounts } from '../counts/thread-counts.ts';
import { explainBotCheck, type BotCheckExplained } from '../signals/bot-services.ts';
import { suaConflictText } from '../signals/sua.ts';
import { categoryOf, noBidReason, type Category } from '../signals/category.ts';
import type { HistoryFacts } from '../signals/history.ts';
import type { FleetFacts } from '../signals/fleet-activity.ts';
import { asParsed } from '../signals/ip-address.ts';
import type { IpAssessment } from '../signals/ip-intel.ts';
import { applyPolicy, classifyTransaction, outcomeForHistory, score, type ScoreResult } from '../signals/score.ts';
import { ALLOW, DENY, PolicyTable, type PolicyMatch, type PolicySubject } from '../policy/compiled.ts';
import { HASH } from '../memory/hash.ts';
import { hashUa } from '../signals/ua-cache.ts';
import type { UaInfo } from '../signals/ua-analysis.ts';
import { hourStart } from '../base/time.ts';
import type { LookupData } from './lookup-data.ts';
import { fillDimensions } from './dimensions.ts';
import { KeyTable } from './keys.ts';
import { QueryScanner } from './query.ts';
import { responseJson } from './response.ts';
import { BotIpTracker } from './bot-ip-tracker.ts';
import { SignalSources, stitcherDeclared, type LookupSignals } from './gather.ts';
import { SeenSample } from './seen-sample.ts';
import type { LookupMemory, SeenValues } from './messages.ts';
import type { SupplyChain } from '../signals/schain.ts';
import { LidCodec, emptyLidInput, type LidInput } from './lid.ts';
import { emptyRequest, validateAuth, validateOrtbRequest, validateRequest, type LookupRequest } from './validate.ts';
import type { Fields } from '../base/shape.ts';
import { emptyOrtbExtra, mapBidRequest, noteMissing, ORTB_NAMES, ortbConfidence, ortbResponseTail, type OrtbExtra } from './ortb/map.ts';

export interface LookupOutcome {
  status: number;
  /** JSON text: the response (200) or {"error","message"}. */
  body: string;
  band: Band | '';
}

/** The full picture of one lookup, for the admin-side explain tool (never on 9898). */
export interface Explanation {
  status: number;
  response: unknown;
  reasons: string[];
  transaction: TransactionClass | null;
  /** The transaction's category (its reporting `category`), null when the lookup is refused. */
  category: Category | null;
  /** The reason code that contributed most ('' when none did): it names the category. */
  leadingReason: string;
  /** The gathered signals the lookup read (their types the hot path's), with the IP and UA in full. */
  signals:
    | (Pick<LookupSignals, 'uaConsistency' | 'suaConflict' | 'schainError' | 'adsTxt' | 'history'> & {
        ip: IpAssessment;
        ua: UaInfo;
        /** LookupSignals.ipFleetBot. */
        fleetBotIp: LookupSignals['ipFleetBot'];
        /** Who a declared bot really is: the crawler or monitor service its UA names, judged by its ranges (null when it names none). */
        crawler: BotCheckExplained | null;
        /**
         * A fleet host: what the whole fleet saw of this lookup's IP, uid and IFA, already
         * folded into `history` (null per key the fleet's view does not hold; null off a fleet).
         */
        fleet: FleetFacts | null;
      })
    | null;
  /** The customer's policy: its thresholds, every kind that matched, and the model's own verdict. Null when it has none. */
  policy: {
    medium: number;
    high: number;
    matches: PolicyMatch[];
    decision: 'allow' | 'deny' | null;
    /** The model's own verdict, before the policy applied (the score's fields, not a copy of their types). */
    model: Pick<ScoreResult, 'score' | 'band' | 'confidence'>;
  } | null;
}

/** A refused lookup: the error body (errorJson), no band. */
function refused(e: ErrorAnswer): LookupOutcome {
  return { status: e.status, body: errorJson(e), band: '' };
}

const BAD_IP = refused({ status: 400, code: 'invalid_parameter', message: 'Invalid parameter ip: must be an IPv4 or IPv6 address.' });
const BAD_KEY = refused({ status: 401, code: 'unauthorized', message: 'Invalid API key for this partner (p): check k and p, or ask your account manager for a new key.' });

export class LookupEngine {
  readonly keys: KeyTable;
  readonly counts: ThreadCounts;
  readonly sources: SignalSources;
  /** Customers' own policies (compiled in shared memory by the main thread). */
  readonly policies = new PolicyTable();
  /** A fleet host's bot-heavy IPs of the moment (null when not in a fleet). */
  readonly botIps: BotIpTracker | null;
  /** Domains, apps and selling systems seen, for the data refresher's crawl (null when it does not crawl). */
  private readonly seen: { sites: SeenSample; apps: SeenSample; systems: SeenSample } | null;
  private readonly scanner: QueryScanner;
  private readonly req: LookupRequest = emptyRequest();
  private readonly ortb: OrtbExtra = emptyOrtbExtra();
  private readonly dims: string[] = new Array(TUPLE_DIMENSIONS.length).fill('');
  private customerId = '';
  /** The last OpenRTB verdict's fields (the filter, src/filter/, acts on them without reading the JSON back); nbr -1: none. */
  readonly lastOrtb = { band: '' as Band | '', score: 0, nbr: -1, lid: '' };
  /** Makes the lookup ids of 200 answers (null: none, e.g. an engine without the fleet's secret). */
  readonly lids: LidCodec | null;
  private readonly lidInput: LidInput = emptyLidInput();
  private readonly subject: PolicySubject = { ip: undefined as unknown as PolicySubject['ip'], ua: '', uaHi: 0, uaLo: 0, app: '', dmn: '', pub: '', sid: '', chain: null };

  constructor(
    public data: LookupData,
    memory: LookupMemory,
    opts: { trackBotIps?: boolean; seenSample?: number; lidSecret?: Uint8Array } = {},
  ) {
    this.lids = opts.lidSecret ? new LidCodec(opts.lidSecret) : null;
    this.botIps = opts.trackBotIps ? new BotIpTracker() : null;
    const n = opts.seenSample ?? 0;
    this.seen = n > 0 ? { sites: new SeenSample(n), apps: new SeenSample(n), systems: new SeenSample(n) } : null;
    this.sources = new SignalSources(memory);
    this.scanner = new QueryScanner(memory.uaMemoBytes / 2, true, this.sources.uaCache.memory.seed);
    this.keys = new KeyTable(memory.keyMemoEntries);
    this.counts = new ThreadCounts(memory.counts, memory.threadCountsBytes);
  }

  /** Answers one lookup. `query` is the raw query string (after `?`). */
  lookup(query: string, now: number): LookupOutcome {
    const refused = this.parse(query, now, null);
    if (refused !== null) return refused;
    return this.verdict(now, false);
  }

  /**
   * Answers one lookup from an OpenRTB bid request (`bid`, the parsed body; `query` holds
   * p, k and node): the same verdict, counted the same, plus `id`, `nbr` and `reasons`.
   * `customerId`: the customer an operator's filter acts for (src/filter/), whose query
   * carries no key; null for a request that must show its own. `verdictOnly`: the caller
   * reads lastOrtb and nothing else (the filter): a 200's body is left empty, not built.
   */
  lookupOrtb(query: string, bid: Fields, now: number, customerId: string | null = null, verdictOnly = false): LookupOutcome {
    const refused = this.parse(query, now, bid, customerId);
    if (refused !== null) return refused;
    return this.verdict(now, true, verdictOnly);
  }

  /** Steps 2-4 on the parsed request, then history and counting. */
  private verdict(now: number, ortb: boolean, verdictOnly = false): LookupOutcome {
    const sc = this.scanner;
    if (sc.uaHashed !== null) this.sources.uaCache.presetHashes(sc.uaHashed, sc.uaHash);
    const s = this.sources.gather(this.req, this.data, now, 'observe');
    if (s === null) return BAD_IP;
    if (this.sources.uaCache.remembered) this.scanner.rememberUa();
    let r = score(s);
    // History learns from this request's own evidence only, so history cannot condemn itself
    // (nor can one customer's policy teach the shared history anything: it is applied after).
    const invalidEvidence = outcomeForHistory(r);
    this.sources.recordOutcome(invalidEvidence);
    if (this.botIps !== null && this.req.ip !== '') this.botIps.note(this.req.ip, invalidEvidence);
    const policy = this.policies.get(this.customerId);
    // A stitching provider's range the customer declared: scored again without its data centre (rare: stitched imps from one).
    if (s.ssaiSpoof && s.ip.hosting && policy !== undefined && policy.ssaiDeclared(this.sources.lastIp)) {
      stitcherDeclared(s);
      r = score(s);
    }
    if (ortb) r.confidence = ortbConfidence(r, this.req, this.ortb.sua !== null);
    let sellerDenied = false;
    if (policy !== undefined) {
      const subject = this.subjectOf(s.schain, policy.uaSeed);
      const d = policy.decide(subject);
      applyPolicy(r, d === DENY ? 'denylisted' : d === ALLOW ? 'allowlisted' : null, policy.medium, policy.high);
      // A deny by a seller entry (a supply-chain node): OpenRTB's own no-bid reason, on the deny path only.
      if (ortb && d === DENY) sellerDenied = (policy.sellerAction(subject) & DENY) !== 0;
    }
    if (this.seen !== null) this.noteSeen(s.schain);
    // The category follows the policy: a denied transaction's leading reason is `denylisted`.
    const cls = classifyTransaction(r);
    this.counts.count(this.customerId, hourStart(now), fillDimensions(this.req, s, categoryOf(cls === 'valid', r.leading), this.dims), cls, now);
    const lid = this.lids === null ? '' : this.makeLid(r.band, now, s);
    let tail = '';
    if (ortb) {
      const nbr = noBidReason(cls === 'valid', r.leading, sellerDenied);
      const v = this.lastOrtb;
      v.band = r.band;
      v.score = r.score;
      v.nbr = nbr ?? -1;
      v.lid = lid;
      if (verdictOnly) return { status: 200, body: '', band: r.band };
      tail = ortbResponseTail(this.ortb, r, nbr);
    }
    return { status: 200, body: responseJson(s, r, lid, tail), band: r.band };
  }

  /** The lookup id of the lookup just counted: digests and keys from this engine's scratch state, no allocation but the token. */
  private makeLid(band: Band, now: number, s: { ua: { os: string; browser: string } }): string {
    const lids = this.lids!;
    const x = this.lidInput;
    const k = this.sources.lastKeys;
    const req = this.req;
    x.customerId = this.customerId;
    x.band = band;
    x.at = now;
    x.ipNet = lids.ipNetDigest(asParsed(this.sources.lastIp));
    x.uaFamily = lids.uaFamilyDigest(s.ua.os, s.ua.browser);
    x.device = lids.deviceDigest(req.ifa !== '' ? req.ifa : req.uid);
    x.ipHi = k.ipHi; x.ipLo = k.ipLo;
    x.uidHi = k.uidHi; x.uidLo = k.uidLo;
    x.ifaHi = k.ifaHi; x.ifaLo = k.ifaLo;
    x.tupleHi = this.counts.lastHi;
    x.tupleLo = this.counts.lastLo;
    return lids.make(x);
  }

  /** A Set probe per value; the samples are bounded per flush. */
  private noteSeen(chain: SupplyChain | null): void {
    const seen = this.seen!;
    const req = this.req;
    if (req.app !== '') seen.apps.add(req.app);
    else seen.sites.add(req.dmn);
    seen.systems.add(req.sid);
    const nodes = chain === null ? null : chain.nodes;
    if (nodes !== null) for (let i = 0; i < nodes.length; i++) seen.systems.add(nodes[i]!.asi);
  }

  /** The values sampled since the last call (null when this engine does not sample). */
  takeSeen(): SeenValues | null {
    const seen = this.seen;
    if (seen === null) return null;
    return { sites: seen.sites.drain(), apps: seen.apps.drain(), systems: seen.systems.drain() };
  }

  /** What lookup() would answer now, with its reasons and signals; changes nothing. */
  explain(query: string, now: number, bid: Fields | null = null): Explanation {
    const ex: Explanation = { status: 0, response: null, reasons: [], transaction: null, category: null, leadingReason: '', signals: null, policy: null };
    const refused = this.parse(query, now, bid);
    const s = refused === null ? this.sources.gather(this.req, this.data, now, 'peek') : null;
    let out: LookupOutcome;
    if (refused !== null) out = refused;
    else if (s === null) out = BAD_IP;
    else {
      const policy = this.policies.get(this.customerId);
      if (s.ssaiSpoof && s.ip.hosting && policy !== undefined && policy.ssaiDeclared(this.sources.lastIp)) stitcherDeclared(s);
      const r: ScoreResult = score(s);
      if (bid !== null) r.confidence = ortbConfidence(r, this.req, this.ortb.sua !== null);
      let sellerDenied = false;
      if (policy !== undefined) {
        const subject = this.subjectOf(s.schain, policy.uaSeed);
        const model = { score: r.score, band: r.band, confidence: r.confidence };
        const d = policy.decide(subject);
        const decision = d === DENY ? 'deny' : d === ALLOW ? 'allow' : null;
        applyPolicy(r, decision === 'deny' ? 'denylisted' : decision === 'allow' ? 'allowlisted' : null, policy.medium, policy.high);
        sellerDenied = d === DENY && (policy.sellerAction(subject) & DENY) !== 0;
        ex.policy = { medium: policy.medium, high: policy.high, matches: policy.matches(subject), decision, model };
      }
      ex.transaction = classifyTransaction(r);
      const tail = bid === null ? '' : ortbResponseTail(this.ortb, r, noBidReason(ex.transaction === 'valid', r.leading, sellerDenied));
      out = { status: 200, body: responseJson(s, r, '', tail), band: r.band };
      ex.reasons = r.reasons.slice();
      if (s.uaInconsistent) ex.reasons.push('ua_inconsistent:' + s.uaConsistency);
      ex.category = categoryOf(ex.transaction === 'valid', r.leading);
      ex.leadingReason = r.leading;
      ex.signals = {
        ip: this.req.ip === '' ? this.data.ip.assess('') : this.data.ip.assessParsed(asParsed(this.sources.lastIp)),
        // Without a UA string (an OpenRTB request), what the lookup used: the device its `sua` describes, or nothing.
        ua: this.req.ua === '' ? { ...this.sources.analyzer.analyze('', now), malformed: false, malformedReason: '', os: s.ua.os, device: s.ua.device, browser: s.ua.browser } : this.sources.analyzer.analyze(this.req.ua, now),
        // Why sua_mismatch fired, in words, when the UA string's own consistency found nothing (it was left empty).
        uaConsistency: s.uaConsistency !== '' || this.req.sua === null ? s.uaConsistency : suaConflictText(s.suaConflict, this.req.sua, s.ua),
        suaConflict: s.suaConflict,
        schainError: s.schainError,
        fleetBotIp: s.ipFleetBot,
        crawler: explainBotCheck(this.data.bots, s.botCheck, s.botService),
        fleet: this.sources.fleetActivity === null ? null : this.sources.fleetActivity.describe(this.sources.lastKeys, now),
        adsTxt: s.adsTxt,
        history: { ...s.history },
      };
    }
    ex.status = out.status;
    ex.response = JSON.parse(out.body);
    return ex;
  }

  /** The request values a policy matches, in the engine's reused object. */
  private subjectOf(chain: PolicySubject['chain'], uaSeed: number): PolicySubject {
    const o = this.subject;
    const req = this.req;
    o.ip = this.sources.lastIp;
    o.ua = req.ua;
    if (uaSeed === this.sources.uaCache.memory.seed) {
      // The hash the UA cache computed for this lookup: no second pass over the UA.
      o.uaHi = this.sources.uaExactHi;
      o.uaLo = this.sources.uaExactLo;
    } else {
      hashUa(req.ua, uaSeed);
      o.uaHi = HASH[0]!;
      o.uaLo = HASH[1]!;
    }
    o.app = req.app;
    o.dmn = req.dmn;
    o.pub = req.pub;
    o.sid = req.sid;
    o.chain = chain;
    return o;
  }

  /** Step 1: scan, authenticate, validate. Null when the request is good (this.req, this.customerId set). */
  private parse(query: string, now: number, bid: Fields | null, trusted: string | null = null): LookupOutcome | null {
    const scanErr = this.scanner.scan(query);
    if (scanErr) return refused(scanErr);
    const v = this.scanner.values;
    const req = this.req;
    let customerId = trusted;
    if (customerId === null) {
      const authErr = validateAuth(v, req);
      if (authErr) return refused(authErr);
      customerId = this.keys.authorize(req.partnerId, req.key, now);
      if (customerId === null) return BAD_KEY;
    }
    if (bid !== null) {
      this.scanner.slotsWritten();
      const mapErr = mapBidRequest(bid, v, this.scanner.raw, this.ortb);
      if (mapErr) return refused(mapErr);
    }
    const valErr = bid === null ? validateRequest(v, this.scanner.raw, req) : validateOrtbRequest(v, this.scanner.raw, req, ORTB_NAMES);
    if (valErr) return refused(valErr);
    if (bid !== null) {
      const o = this.ortb;
      req.schainObject = o.schain;
      req.sua = o.sua;
      req.ifaType = o.ifaType;
      req.ssai = o.ssai;
      noteMissing(req, o);
    }
    this.customerId = customerId;
    return null;
  }
}
