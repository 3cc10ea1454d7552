// The lookup itself: scan → authenticate → validate → signals → score → JSON, all
// synchronous over memory owned by the calling thread. One LookupEngine per thread.
import { TUPLE_DIMENSIONS, environmentOf, type Band, type TransactionClass } from '../enums.ts';
import { History, ipBotActivity } from '../signals/history.ts';
import type { IpAssessment, IpIntel } from '../signals/ip.ts';
import { ifaMalformed, isZeroIfa, type IfaList } from '../signals/ifa.ts';
import { parseSchain, type SellersRegistry } from '../signals/schain.ts';
import { classifyTransaction, outcomeForHistory, score, type ScoreInputs, type ScoreResult } from '../signals/score.ts';
import { uaConsistency, type UaAnalyzer, type UaInfo } from '../signals/ua.ts';
import { TransactionCounter } from './counts.ts';
import { KeyTable } from './keys.ts';
import { QueryScanner } from './query.ts';
import { emptyRequest, validateAuth, validateRequest, type LookupRequest } from './validate.ts';

/** Everything a lookup reads that comes from data files; swapped whole on reload. */
export interface LookupData {
  ip: IpIntel;
  ua: UaAnalyzer;
  sellers: SellersRegistry;
  badIfas: IfaList;
}

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
  signals: { ip: IpAssessment; ua: UaInfo; uaConsistency: string } | null;
}

const HOUR_MS = 3_600_000;

function err(status: number, code: string, message: string): LookupOutcome {
  return { status, body: JSON.stringify({ error: code, message }), band: '' };
}

export class LookupEngine {
  readonly history: History;
  readonly keys = new KeyTable();
  readonly counts: TransactionCounter;
  private readonly scanner = new QueryScanner();
  private readonly req: LookupRequest = emptyRequest();
  private readonly dims: string[] = new Array(TUPLE_DIMENSIONS.length).fill('');
  private readonly inputs: ScoreInputs;

  constructor(
    public data: LookupData,
    opts: { maxTuples?: number; history?: History } = {},
  ) {
    this.history = opts.history ?? new History();
    this.counts = new TransactionCounter(opts.maxTuples);
    this.inputs = {
      ipInvalid: false, ipBogon: false, uaMalformed: false, ifaMalformed: false, ifaKnownBad: false,
      deviceImpossible: false, declaredBot: false, automation: false, ipHosting: false, ipVpn: false,
      ipProxy: false, ipTor: false, uaInconsistent: false, geoMismatch: false, schainPresent: false,
      schainValid: false, schainVerified: false, schainComplete: false, zeroIfa: false,
      history: undefined as never,
    };
  }

  /** Answers one lookup. `query` is the raw query string (after `?`). */
  lookup(query: string, now: number): LookupOutcome {
    return this.run(query, now, null);
  }

  explain(query: string, now: number): Explanation {
    const ex: Explanation = { status: 0, response: null, reasons: [], transaction: null, signals: null };
    const out = this.run(query, now, ex);
    ex.status = out.status;
    ex.response = JSON.parse(out.body);
    return ex;
  }

  private run(query: string, now: number, ex: Explanation | null): LookupOutcome {
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

    const d = this.data;
    const ip = d.ip.assess(req.ip);
    if (!ip.valid) return err(400, 'invalid_parameter', 'Invalid parameter ip: must be an IPv4 or IPv6 address.');
    const ua = d.ua.analyze(req.ua);
    const cons = uaConsistency(ua, req.dvt, req.app || undefined, req.ifa || undefined);

    let schainValid = false, schainVerified = false, schainComplete = 0;
    const schainPresent = req.schainRaw !== undefined && req.schainRaw !== '';
    if (schainPresent) {
      const r = parseSchain(req.schainRaw!);
      if (r.ok) {
        schainValid = true;
        schainComplete = r.chain.complete;
        schainVerified = d.sellers.verify(r.chain);
      }
    }

    const ifaBadForm = req.ifa !== '' && ifaMalformed(req.ifa) !== '';
    const facts = this.history.observe({ ip: req.ip, uid: req.uid, ifa: req.ifa, ua: req.ua, pub: req.pub, now });

    const i = this.inputs;
    i.ipInvalid = false;
    i.ipBogon = ip.bogon;
    i.uaMalformed = ua.malformed;
    i.ifaMalformed = ifaBadForm;
    i.ifaKnownBad = req.ifa !== '' && d.badIfas.has(req.ifa);
    // A desktop browser UA cannot be an in-app or CTV device with an advertising ID.
    i.deviceImpossible = ua.device === 'desktop' && req.ifa !== '' && req.app !== '' && req.dvt !== 2;
    i.declaredBot = ua.declaredBot;
    i.automation = ua.automation;
    i.ipHosting = ip.hosting;
    i.ipVpn = ip.vpn;
    i.ipProxy = ip.proxy;
    i.ipTor = ip.tor;
    i.uaInconsistent = !cons.consistent;
    i.geoMismatch = req.geo !== '' && ip.country !== '' && req.geo !== ip.country;
    i.schainPresent = schainPresent;
    i.schainValid = schainValid;
    i.schainVerified = schainVerified;
    i.schainComplete = schainComplete === 1;
    i.zeroIfa = req.ifa !== '' && isZeroIfa(req.ifa);
    i.history = facts;
    const s: ScoreResult = score(i);
    const cls = classifyTransaction(s);
    // History learns from this request's own evidence only, so history cannot condemn itself.
    this.history.recordOutcome({ ip: req.ip, uid: req.uid, ifa: req.ifa }, outcomeForHistory(s));

    const uaValid = !(ua.malformed || ua.automation || !cons.consistent);
    const botActivity = ipBotActivity(facts);
    const body =
      `{"botRisk":{"score":${s.score},"band":"${s.band}","confidence":${s.confidence}},` +
      `"components":{"p_hard":${s.p_hard},"p_givt":${s.p_givt},"p_sivt":${s.p_sivt},"p_hist":${s.p_hist}},` +
      `"ipReputation":{"ipBotActivity":${botActivity},"ipHosting":${ip.hosting},"ipVpn":${ip.vpn || ip.proxy || ip.tor}},` +
      `"uaValid":${uaValid},` +
      `"schain":{"valid":${schainValid},"verified":${schainVerified},"complete":${schainComplete}}}`;

    if (ex === null) {
      // Dimensions in TUPLE_DIMENSIONS order: pub sid app dmn node adt geo dvt os browser env cmp adv p1..p5.
      const dm = this.dims;
      dm[0] = req.pub; dm[1] = req.sid; dm[2] = req.app; dm[3] = req.dmn; dm[4] = req.node;
      dm[5] = String(req.adt); dm[6] = req.geo || ip.country; dm[7] = String(req.dvt);
      dm[8] = ua.os; dm[9] = ua.browser; dm[10] = environmentOf(req.app, req.dvt);
      dm[11] = req.cmp; dm[12] = req.adv;
      dm[13] = req.p1; dm[14] = req.p2; dm[15] = req.p3; dm[16] = req.p4; dm[17] = req.p5;
      this.counts.add(customerId, now - (now % HOUR_MS), dm, cls);
    } else {
      ex.reasons = s.reasons.slice();
      if (!cons.consistent) ex.reasons.push('ua_inconsistent:' + cons.reason);
      ex.transaction = cls;
      ex.signals = { ip, ua, uaConsistency: cons.reason };
    }
    return { status: 200, body, band: s.band };
  }
}
