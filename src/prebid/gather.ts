// Step 2 of a lookup: from a validated request to the signals, one plain object per
// thread (reused), that the score, the response, the reporting dimensions and the admin
// explain all read. Every source is memory: the shared IP and UA verdict caches, the
// shared history, the loaded data.
import type { LookupMemory } from './messages.ts';
import { uaConsistency } from '../signals/device-consistency.ts';
import { FleetBotIps } from '../signals/fleet-bot-ips.ts';
import { ActivityDeltas, FleetActivity } from '../signals/fleet-activity.ts';
import { History, emptyKeys, ipBotActivity, type HistoryFacts, type HistoryKeys } from '../signals/history.ts';
import { ifaMalformed, ifaTypeConflict, isZeroIfa } from '../signals/ifa.ts';
import { asParsed, ipScratch, parseIpInto, type IpScratch } from '../signals/ip-address.ts';
import { IpCache } from '../signals/ip-cache.ts';
import { emptyIpVerdict, type IpVerdict } from '../signals/ip-intel.ts';
import { parseSchain, type SupplyChain } from '../signals/schain.ts';
import { ADS_TXT_RESULT, type AdsTxtVerdict } from '../signals/ads-txt.ts';
import { suaConflict, suaDevice } from '../signals/sua.ts';
import { isGenuine, isSpoofed } from '../signals/bot-services.ts';
import { CrawlerDns } from '../signals/crawler-dns.ts';
import { bundleProblem } from '../signals/app-bundle.ts';
import type { ScoreInputs } from '../signals/score.ts';
import { UaAnalyzer, emptyVerdict, type UaVerdict } from '../signals/ua-analysis.ts';
import { UaCache } from '../signals/ua-cache.ts';
import type { LookupData } from './lookup-data.ts';
import type { LookupRequest } from './validate.ts';

/** The flags the score reads, plus the facts behind them. */
export interface LookupSignals extends ScoreInputs {
  readonly ip: IpVerdict;
  readonly ua: UaVerdict;
  /** '' when the UA fits dvt/app/ifa, else the rule that failed (device-consistency.ts). */
  uaConsistency: string;
  /** The supply chain's complete flag as sent: 0 or 1 (0 when absent or invalid). */
  schainCompleteFlag: 0 | 1;
  /** '' when the chain parsed (or none was sent), else the parse error code. */
  schainError: string;
  /** The parsed chain (null when absent or invalid); a customer's seller entries match its nodes. */
  schain: SupplyChain | null;
  /** '' when no `device.sua` came or it agrees with the UA, else what contradicts it (src/signals/sua.ts). */
  suaConflict: string;
  ipBotActivity: boolean;
  /** The IP is in the fleet's bot-heavy set (a fleet host only; src/fleet/bot-ips.ts). */
  ipFleetBot: boolean;
  /** '' when the app bundle ID fits the store of the UA's OS, else why not (src/signals/app-bundle.ts). */
  appBundle: string;
  /** ads.txt / app-ads.txt verdict on the seller (sellerUnauthorized is its `unauthorized`). */
  adsTxt: AdsTxtVerdict;
  /** A server-side stitched imp with an HTTP library's UA (one half of ssaiSpoof; the other is a data-centre IP). */
  ssaiServerUa: boolean;
  /** Who a declared bot really is (src/signals/bot-services.ts): the check (CHECK, 0 when not asked) and the service's index (-1: none). */
  botCheck: number;
  botService: number;
}

/**
 * The customer's policy declares the client IP a stitching provider's (kind `ssai`): on a
 * stitched imp its data centre is neither `asn_hosting` nor the SSAI spoof; a library UA still is.
 */
export function stitcherDeclared(s: LookupSignals): void {
  s.ipHosting = false;
  s.ssaiSpoof = s.ssaiServerUa;
}

/** The IP verdict of a lookup without an IP: nothing known, nothing held against it. */
const NO_IP: Readonly<IpVerdict> = Object.freeze(emptyIpVerdict());
/** The UA verdict of a lookup without a UA string (before `sua` fills it in). */
const NO_UA: Readonly<UaVerdict> = Object.freeze(emptyVerdict());

/**
 * UAs of HTTP client libraries and command-line tools: a server's own requests, never a
 * device's player or browser (an SSAI server must forward the device's UA instead).
 */
export const HTTP_LIBRARY_UA = /^(?:Go-http-client|okhttp|python-requests|Python-urllib|python-httpx|aiohttp|curl|Wget|Apache-HttpClient|Java\/|Jakarta Commons-HttpClient|node-fetch|axios|undici|got |libwww-perl|Ruby|Faraday|RestSharp|GuzzleHttp|Dart\/|reqwest|hyper\/|PostmanRuntime)/i;

export function emptySignals(): LookupSignals {
  return {
    ipBogon: false, uaMalformed: false, ifaMalformed: false, ifaKnownBad: false, deviceImpossible: false,
    declaredBot: false, aiAgent: false, crawlerSpoofed: false, automation: false, ipHosting: false, ipVpn: false, ipProxy: false, ipTor: false,
    uaInconsistent: false, geoMismatch: false, schainPresent: false, schainValid: false, schainVerified: false,
    schainComplete: false, zeroIfa: false, ipRelay: false, sellerUnauthorized: false, history: undefined as unknown as HistoryFacts,
    ip: emptyIpVerdict(), ua: emptyVerdict(), uaConsistency: '', schainCompleteFlag: 0, schainError: '', schain: null, suaConflict: '', suaMismatch: false, ifaTypeMismatch: false, ssaiSpoof: false,
    ipBotActivity: false, ipFleetBot: false, adsTxt: ADS_TXT_RESULT.no_domain, ssaiServerUa: false, appBundle: '', appBundleMalformed: false,
    monitor: false, botCheck: 0, botService: -1,
  };
}

/**
 * `observe`: the lookup path (shared caches, history counts this lookup).
 * `peek`: the admin explain (no cache, history read as the lookup would see it, nothing written).
 */
export type GatherMode = 'observe' | 'peek';

/** One thread's view of the shared memory, and its scratch space. */
export class SignalSources {
  readonly history: History;
  readonly uaCache: UaCache;
  readonly ipCache: IpCache;
  readonly fleetBotIps: FleetBotIps;
  readonly crawlerDns: CrawlerDns;
  private readonly botCheck = new Int32Array(2);
  /** A fleet host: the fleet's activity per key, added to history's facts (else null). */
  readonly fleetActivity: FleetActivity | null;
  /** A fleet host: where its lookups' activity per key goes for publication (else null). */
  readonly activityDeltas: ActivityDeltas | null;
  readonly analyzer = new UaAnalyzer();
  private readonly ipAddr: IpScratch = ipScratch();
  private readonly keys: HistoryKeys = emptyKeys();
  private readonly signals: LookupSignals = emptySignals();
  /** The last gather()'s hash of the UA as sent (the UA cache's seed): exact-UA policy entries use it. */
  uaExactHi = 0;
  uaExactLo = 0;

  constructor(memory: LookupMemory) {
    this.history = new History(memory.history);
    this.uaCache = new UaCache(memory.uaCache, this.analyzer, memory.uaMemoBytes / 2);
    this.ipCache = new IpCache(memory.ipCache);
    this.fleetBotIps = new FleetBotIps(memory.fleetBotIps);
    this.crawlerDns = new CrawlerDns(memory.crawlerDns);
    this.fleetActivity = memory.fleetActivity ? new FleetActivity(memory.fleetActivity.view, memory.history.windowMs) : null;
    this.activityDeltas = memory.fleetActivity ? new ActivityDeltas(memory.fleetActivity.deltas) : null;
  }

  /** The history keys of the last gather() (valid until the next one): the lookup id carries them. */
  get lastKeys(): Readonly<HistoryKeys> {
    return this.keys;
  }

  /** The parsed client IP of the last gather() (valid until the next one). */
  get lastIp(): IpScratch {
    return this.ipAddr;
  }

  /**
   * Gathers the signals of one request, or returns null when its `ip` is not an address.
   * The returned object is reused: read it before the next call. After an `observe`,
   * call recordOutcome() with the request-level verdict.
   */
  gather(req: LookupRequest, data: LookupData, now: number, mode: GatherMode): LookupSignals | null {
    const ipAddr = this.ipAddr;
    // No IP only on an OpenRTB lookup without one (the GET form requires it): no IP signal.
    const hasIp = req.ip !== '';
    if (hasIp) {
      if (!parseIpInto(req.ip, ipAddr)) return null;
    } else ipAddr.v = 0;
    const s = this.signals;
    const ip = s.ip;
    const ua = s.ua;
    if (mode === 'observe') {
      if (hasIp) this.ipCache.verdict(ipAddr, data.ip, data.generation, ip);
      else Object.assign(ip, NO_IP);
      this.uaCache.verdict(req.ua, now, ua);
    } else {
      if (hasIp) data.ip.verdict(asParsed(ipAddr), ip);
      else Object.assign(ip, NO_IP);
      this.uaCache.uncachedVerdict(req.ua, now, ua);
    }
    this.uaExactLo = this.uaCache.exactLo;
    this.uaExactHi = this.uaCache.exactHi;
    // No UA string only on an OpenRTB lookup: the device as its `sua` describes it, else unknown (never malformed).
    const hasUa = req.ua !== '';
    if (!hasUa) {
      Object.assign(ua, NO_UA);
      if (req.sua !== null) suaDevice(req.sua, ua);
    }
    // SSAI (OpenRTB imp.ssai 2, 3): the stitching server must pass the device's IP and UA on;
    // its own data-centre address or HTTP library's UA instead is the classic SSAI spoof.
    const serverUa = req.ssai >= 2 && hasUa && HTTP_LIBRARY_UA.test(req.ua);
    s.ssaiServerUa = serverUa;
    s.ssaiSpoof = req.ssai >= 2 && (ip.hosting || serverUa);

    s.uaConsistency = uaConsistency(ua, req.dvt, req.app || undefined, req.ifa || undefined).reason;

    s.suaConflict = req.sua === null || !hasUa ? '' : suaConflict(req.sua, ua);
    s.ifaTypeMismatch = req.ifa !== '' && ifaTypeConflict(req.ifaType, ua.os);

    s.schainPresent = req.schainObject !== undefined || (req.schainRaw !== undefined && req.schainRaw !== '');
    s.schainValid = false;
    s.schainVerified = false;
    s.schainCompleteFlag = 0;
    s.schainError = '';
    s.schain = null;
    if (s.schainPresent) {
      const r = req.schainObject ?? parseSchain(req.schainRaw!);
      if (r.ok) {
        s.schainValid = true;
        s.schain = r.chain;
        s.schainCompleteFlag = r.chain.complete;
        s.schainVerified = data.sellers.verify(r.chain);
      } else {
        s.schainError = r.error;
      }
    }
    s.schainComplete = s.schainCompleteFlag === 1;
    // The crawl's in-memory result only: a publisher not crawled yet is `unknown`, never held against the request.
    s.adsTxt = data.adsTxt.authorize(req.dmn, req.app, req.sid, req.pub, s.schain === null ? null : s.schain.nodes);
    s.sellerUnauthorized = s.adsTxt.verdict === 'unauthorized';

    const hasIfa = req.ifa !== '';
    s.ipBogon = ip.bogon;
    s.uaMalformed = ua.malformed;
    s.ifaMalformed = hasIfa && ifaMalformed(req.ifa) !== '';
    s.ifaKnownBad = hasIfa && data.badIfas.has(req.ifa);
    s.zeroIfa = hasIfa && isZeroIfa(req.ifa);
    // A desktop browser UA cannot be an in-app or CTV device with an advertising ID.
    s.deviceImpossible = ua.device === 'desktop' && hasIfa && req.app !== '' && req.dvt !== 2;
    // Under an SSAI spoof the data centre and the library UA are that one reason (SIVT), not
    // GIVT ones. Who a declared bot really is (src/signals/bot-services.ts), asked of declared
    // bots only: a UA naming a crawler or monitor service is judged by that service's own
    // ranges (a non-authoritative list by reverse DNS, done off this thread): from outside
    // them it is an impersonator; from inside, a monitor is `monitoring`, a crawler stays a
    // declared crawler or an AI agent (one naming an AI agent's token).
    const declared = ua.declaredBot && !serverUa;
    const check = this.botCheck;
    if (declared) data.bots.judge(req.ua, hasIp ? asParsed(ipAddr) : null, ip.crawler, this.crawlerDns, Math.floor(now / 1000), check);
    else {
      check[0] = 0;
      check[1] = -1;
    }
    s.botCheck = check[0]!;
    s.botService = check[1]!;
    s.crawlerSpoofed = declared && isSpoofed(s.botCheck);
    s.monitor = declared && isGenuine(s.botCheck) && data.bots.isMonitor(s.botService);
    s.aiAgent = declared && !s.crawlerSpoofed && !s.monitor && data.aiAgents.test(req.ua);
    s.declaredBot = declared && !s.crawlerSpoofed && !s.aiAgent && !s.monitor;
    s.automation = ua.automation;
    s.ipHosting = ip.hosting && !s.ssaiSpoof;
    s.ipVpn = ip.vpn;
    s.ipProxy = ip.proxy;
    s.ipTor = ip.tor;
    s.ipRelay = ip.relay;
    s.uaInconsistent = s.uaConsistency !== '';
    s.suaMismatch = s.suaConflict !== '';
    s.appBundle = bundleProblem(req.app, ua.os, req.ua);
    s.appBundleMalformed = s.appBundle !== '';
    s.geoMismatch = req.geo !== '' && ip.country !== '' && req.geo !== ip.country;

    const keys = this.history.keysOf(asParsed(ipAddr), req.uid, req.ifa, this.uaExactLo, this.keys);
    s.history = mode === 'observe' ? this.history.observe(keys, now) : this.history.peek(keys, now);
    // A fleet host: what the other hosts saw of these keys completes this host's view.
    if (this.fleetActivity !== null) this.fleetActivity.complete(keys, s.history, now);
    s.ipFleetBot = this.fleetBotIps.has(keys.ipHi, keys.ipLo);
    s.ipBotActivity = s.ipFleetBot || ipBotActivity(s.history);
    return s;
  }

  /** Feeds the request-level outcome of the last observed lookup back into history. */
  recordOutcome(invalid: boolean): void {
    this.history.recordOutcome(this.keys, invalid);
    if (this.activityDeltas !== null) this.activityDeltas.note(this.keys, invalid);
  }
}
