// A lookup, start to end, all synchronous over memory:
//   1. parse     the raw query → a validated LookupRequest (and the customer its key names)
//   2. signals   → one LookupSignals object (signals.ts)
//   3. score     → ScoreResult (src/signals/score.ts)
//   4. serialize → the JSON answer (response.ts)
// then, on the lookup path only, the history learns the outcome and the transaction is
// counted for reporting. The admin explain runs steps 1-4 over the same state and data in
// 'peek' mode: it reads what the lookup threads have and writes nothing.
// One LookupEngine per lookup thread (and one on the main thread, for explain).
import { TUPLE_DIMENSIONS, type Band, type TransactionClass } from '../enums.ts';
import type { LookupMemory } from '../memory/budget.ts';
import { ThreadCounts } from '../reporting/thread-counts.ts';
import type { HistoryFacts } from '../signals/history.ts';
import { asParsed } from '../signals/ip-address.ts';
import type { IpAssessment } from '../signals/ip-intel.ts';
import { classifyTransaction, outcomeForHistory, score, type ScoreResult } from '../signals/score.ts';
import type { UaInfo } from '../signals/ua-analysis.ts';
import { hourStart } from '../time.ts';
import type { LookupData } from './data.ts';
import { fillDimensions } from './dimensions.ts';
import { KeyTable } from './keys.ts';
import { QueryScanner } from './query.ts';
import { responseJson } from './response.ts';
import { BotIpTracker } from './bot-ip-tracker.ts';
import { SignalSources } from './signals.ts';
import { emptyRequest, validateAuth, validateRequest, type LookupRequest } from './validate.ts';

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
  signals: {
    ip: IpAssessment;
    ua: UaInfo;
    uaConsistency: string;
    schainError: string;
    fleetBotIp: boolean;
    history: HistoryFacts;
  } | null;
}

function err(status: number, code: string, message: string): LookupOutcome {
  return { status, body: JSON.stringify({ error: code, message }), band: '' };
}

const BAD_IP = err(400, 'invalid_parameter', 'Invalid parameter ip: must be an IPv4 or IPv6 address.');

export class LookupEngine {
  readonly keys: KeyTable;
  readonly counts: ThreadCounts;
  readonly sources: SignalSources;
  /** A fleet host's bot-heavy IPs of the moment (null when not in a fleet). */
  readonly botIps: BotIpTracker | null;
  private readonly scanner = new QueryScanner();
  private readonly req: LookupRequest = emptyRequest();
  private readonly dims: string[] = new Array(TUPLE_DIMENSIONS.length).fill('');
  private customerId = '';

  constructor(
    public data: LookupData,
    memory: LookupMemory,
    opts: { trackBotIps?: boolean } = {},
  ) {
    this.botIps = opts.trackBotIps ? new BotIpTracker() : null;
    this.sources = new SignalSources(memory);
    this.keys = new KeyTable(memory.keyMemoEntries);
    this.counts = new ThreadCounts(memory.counts, memory.threadCountsBytes);
  }

  /** Answers one lookup. `query` is the raw query string (after `?`). */
  lookup(query: string, now: number): LookupOutcome {
    const refused = this.parse(query, now);
    if (refused !== null) return refused;
    const s = this.sources.gather(this.req, this.data, now, 'observe');
    if (s === null) return BAD_IP;
    const r = score(s);
    // History learns from this request's own evidence only, so history cannot condemn itself.
    const invalidEvidence = outcomeForHistory(r);
    this.sources.recordOutcome(invalidEvidence);
    if (this.botIps !== null) this.botIps.note(this.req.ip, invalidEvidence);
    this.counts.count(this.customerId, hourStart(now), fillDimensions(this.req, s, this.dims), classifyTransaction(r), now);
    return { status: 200, body: responseJson(s, r), band: r.band };
  }

  /** What lookup() would answer now, with its reasons and signals; changes nothing. */
  explain(query: string, now: number): Explanation {
    const ex: Explanation = { status: 0, response: null, reasons: [], transaction: null, signals: null };
    const refused = this.parse(query, now);
    const s = refused === null ? this.sources.gather(this.req, this.data, now, 'peek') : null;
    let out: LookupOutcome;
    if (refused !== null) out = refused;
    else if (s === null) out = BAD_IP;
    else {
      const r: ScoreResult = score(s);
      out = { status: 200, body: responseJson(s, r), band: r.band };
      ex.reasons = r.reasons.slice();
      if (s.uaInconsistent) ex.reasons.push('ua_inconsistent:' + s.uaConsistency);
      ex.transaction = classifyTransaction(r);
      ex.signals = {
        ip: this.data.ip.assessParsed(asParsed(this.sources.lastIp)),
        ua: this.sources.analyzer.analyze(this.req.ua, now),
        uaConsistency: s.uaConsistency,
        schainError: s.schainError,
        fleetBotIp: s.ipFleetBot,
        history: { ...s.history },
      };
    }
    ex.status = out.status;
    ex.response = JSON.parse(out.body);
    return ex;
  }

  /** Step 1: scan, authenticate, validate. Null when the request is good (this.req, this.customerId set). */
  private parse(query: string, now: number): LookupOutcome | null {
    const scanErr = this.scanner.scan(query);
    if (scanErr) return err(400, scanErr.code, scanErr.message);
    const v = this.scanner.values;
    const req = this.req;
    const authErr = validateAuth(v, req);
    if (authErr) return err(authErr.status, authErr.code, authErr.message);
    const customerId = this.keys.authorize(req.partnerId, req.key, now);
    if (customerId === null) {
      return err(401, 'unauthorized', 'Invalid API key for this partner (p): check k and p, or ask your account manager for a new key.');
    }
    const valErr = validateRequest(v, this.scanner.raw, req);
    if (valErr) return err(valErr.status, valErr.code, valErr.message);
    this.customerId = customerId;
    return null;
  }
}
