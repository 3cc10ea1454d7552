// The impression beacon on a lookup thread: GET /api/v1/ivt/imp?lid=<lid>[&fmt=gif], fired
// by a VAST <Impression>, a display pixel or a bidder's burl (docs/post-bid.md). It judges
// the impression from the lid alone plus the device that fires it, synchronously over
// memory: `expired` (later than --imp-ttl), `replay` (the lid came before: the shared
// seen-lids table), `mismatch` (another /24 or /48 AND another UA family than the lookup's
// device), else `valid`. A replay or mismatch is evidence against the lookup's IP, uid and IFA
// in the shared history; every judged impression is counted for the reports.
import type { ErrorAnswer } from '../base/errors.ts';
import type { ImpStatus } from '../base/enums.ts';
import type { History, HistoryKeys } from '../signals/history.ts';
import { emptyKeys } from '../signals/history.ts';
import { ipScratch, asParsed, parseIpInto, type IpScratch } from '../signals/ip-address.ts';
import type { UaCache } from '../signals/ua-cache.ts';
import { emptyVerdict, type UaVerdict } from '../signals/ua-analysis.ts';
import { LidCodec, emptyLidFacts, type LidError, type LidFacts } from './lid.ts';
import type { BeaconIpRow, BeaconSettings, ImpressionDeltas, LookupMemory } from './messages.ts';
import { hashId } from '../memory/hash.ts';
import { SeenLids } from './seen-lids.ts';
import { TrustedProxies } from './trusted-proxies.ts';
import { ImpressionCounts } from '../counts/impression-counts.ts';

export const IMP_PATH = '/api/v1/ivt/imp';

/** Fleet: first sights a thread reports per counts interval at most (the rest are not shared). */
export const FIRST_SEEN_MAX = 50_000;
/** Fleet: IPs (history keys) with invalid impressions a thread tracks per counts interval. */
export const BAD_IPS_MAX = 2000;

/** What a beacon's answer is, and how it was counted (`refused`: a 400, counted in /metrics only). */
export type BeaconOutcome = ImpStatus | 'refused';

/** The request headers the judge reads (taken from uWS's req inside the handler). */
export interface BeaconHeaders {
  peer: string;
  userAgent: string;
  deviceIp: string;
  deviceUa: string;
  forwardedFor: string;
}

export function emptyBeaconHeaders(): BeaconHeaders {
  return { peer: '', userAgent: '', deviceIp: '', deviceUa: '', forwardedFor: '' };
}

const NO_LID: ErrorAnswer = { status: 400, code: 'missing_parameter', message: 'Missing required parameter: lid (the lookup id from the lookup answer).' };
const BAD_FMT: ErrorAnswer = { status: 400, code: 'invalid_parameter', message: 'Invalid parameter fmt: the only format is gif (omit fmt for 204 No Content).' };
const LID_REFUSALS: Readonly<Record<Exclude<LidError, ''>, ErrorAnswer>> = {
  length: { status: 400, code: 'invalid_parameter', message: 'Invalid parameter lid: not a lookup id (wrong length); pass the lid of a lookup answer unchanged.' },
  alphabet: { status: 400, code: 'invalid_parameter', message: 'Invalid parameter lid: not a lookup id (characters outside base64url); pass the lid of a lookup answer unchanged.' },
  version: { status: 400, code: 'invalid_parameter', message: 'Invalid parameter lid: not a lookup id this server makes.' },
  signature: { status: 400, code: 'invalid_parameter', message: 'Invalid parameter lid: its signature does not match (altered, or made with another secret).' },
  band: { status: 400, code: 'invalid_parameter', message: 'Invalid parameter lid: not a lookup id this server makes.' },
};
const BAD_DEVICE_IP: ErrorAnswer = { status: 400, code: 'invalid_parameter', message: 'Invalid header X-Device-IP: must be an IPv4 or IPv6 address.' };
const BAD_FORWARDED: ErrorAnswer = { status: 400, code: 'invalid_parameter', message: 'Invalid header X-Forwarded-For: must be IP addresses separated by commas.' };
const NO_PEER: ErrorAnswer = { status: 400, code: 'invalid_request', message: 'The address of the device firing the beacon could not be read.' };

export class BeaconJudge {
  readonly lids: LidCodec;
  readonly seen: SeenLids;
  readonly counts: ImpressionCounts;
  private readonly proxies: TrustedProxies;
  private readonly ttlMs: number;
  private readonly facts: LidFacts = emptyLidFacts();
  private readonly keys: HistoryKeys = emptyKeys();
  private readonly ua: UaVerdict = emptyVerdict();
  private readonly peerIp: IpScratch = ipScratch();
  private readonly deviceIp: IpScratch = ipScratch();
  /** The error of the last refused beacon (valid until the next judge()). */
  error: ErrorAnswer | null = null;
  /** The last beacon asked for a GIF. */
  gif = false;
  /** Fleet only (settings.fleet): what the other hosts learn from this thread's beacons. */
  private readonly fleet: boolean;
  private firstSeen: number[] = [];
  private badIps = new Map<number, BeaconIpRow>();

  constructor(
    settings: BeaconSettings,
    memory: LookupMemory,
    private readonly history: History,
    private readonly uaCache: UaCache,
  ) {
    this.lids = new LidCodec(settings.lidSecret);
    this.seen = new SeenLids(memory.impressions.seen);
    this.counts = new ImpressionCounts(memory.impressions.counts);
    this.proxies = new TrustedProxies(settings.trustedProxies);
    this.ttlMs = settings.impTtlMs;
    this.fleet = settings.fleet === true;
  }

  /** The thread's impression deltas for its next report (fleet: with first sights and bad IPs). */
  take(): ImpressionDeltas {
    const d: ImpressionDeltas = this.counts.take();
    if (this.fleet) {
      if (this.firstSeen.length > 0) {
        d.firstSeen = this.firstSeen;
        this.firstSeen = [];
      }
      if (this.badIps.size > 0) {
        d.badIps = [...this.badIps.values()];
        this.badIps = new Map();
      }
    }
    return d;
  }

  /** Fleet: an IP key enters on an invalid impression (bounded); then its beacons are counted. */
  private noteIp(f: LidFacts, invalid: boolean): void {
    if (f.ipHi === 0 && f.ipLo === 0) return;
    const id = hashId(f.ipHi, f.ipLo);
    const e = this.badIps.get(id);
    if (e !== undefined) {
      e.beacons++;
      if (invalid) e.invalid++;
    } else if (invalid && this.badIps.size < BAD_IPS_MAX) {
      this.badIps.set(id, { hi: f.ipHi, lo: f.ipLo, beacons: 1, invalid: 1 });
    }
  }

  /** Judges one beacon; `query` is the raw query string. On 'refused', `error` says why. */
  judge(query: string, h: BeaconHeaders, now: number): BeaconOutcome {
    this.error = null;
    this.gif = false;
    let lid = '';
    let fmt: string | null = null;
    // A plain scan: lid is base64url (nothing to decode); other parameters (a VAST
    // cache-buster) are ignored; the first lid and fmt count.
    for (let i = 0; i < query.length; ) {
      let end = query.indexOf('&', i);
      if (end < 0) end = query.length;
      if (lid === '' && query.startsWith('lid=', i)) lid = query.slice(i + 4, end);
      else if (fmt === null && query.startsWith('fmt=', i)) fmt = query.slice(i + 4, end);
      i = end + 1;
    }
    if (fmt !== null && fmt !== 'gif') return this.refuse(BAD_FMT);
    this.gif = fmt === 'gif';
    if (lid === '') return this.refuse(NO_LID);
    const f = this.facts;
    const why = this.lids.read(lid, f);
    if (why !== '') return this.refuse(LID_REFUSALS[why]);
    const device = this.device(h);
    if (device === null) return 'refused';

    let status: ImpStatus;
    // Whether this beacon labels its lookup (calibration): its first beacon does (valid or
    // invalid), and so does the first replay of a lookup first seen valid (now invalid).
    let labels = 0;
    if (this.ttlMs > 0 && now - f.at > this.ttlMs) status = 'expired';
    else {
      this.uaCache.verdict(device.ua, now, this.ua);
      const otherNet = this.lids.ipNetDigest(asParsed(device.ip)) !== f.ipNet;
      const otherUa = this.lids.uaFamilyDigest(this.ua.os, this.ua.browser) !== f.uaFamily;
      const mismatch = otherNet && otherUa;
      const before = this.seen.note(f.tagHi, f.tagLo, Math.floor(f.at / 1000), Math.floor(now / 1000), Math.floor(this.ttlMs / 1000), mismatch);
      if (before > 0) {
        status = 'replay';
        if (before === 1 && !this.seen.firstWasMismatch) labels = 1;
      } else {
        status = mismatch ? 'mismatch' : 'valid';
        labels = 1;
        if (this.fleet && this.firstSeen.length < FIRST_SEEN_MAX * 4) this.firstSeen.push(f.tagHi, f.tagLo, Math.floor(f.at / 1000), mismatch ? 1 : 0);
      }
      if (this.fleet) this.noteIp(f, status !== 'valid');
    }
    if (status === 'replay' || status === 'mismatch') this.learn(f);
    this.counts.count(f, status, now, labels);
    return status;
  }

  private refuse(e: ErrorAnswer): 'refused' {
    this.error = e;
    return 'refused';
  }

  /** The history learns that this lookup's IP, uid and IFA served an invalid impression. */
  private learn(f: LidFacts): void {
    const k = this.keys;
    k.ipHi = f.ipHi; k.ipLo = f.ipLo;
    k.uidHi = f.uidHi; k.uidLo = f.uidLo;
    k.ifaHi = f.ifaHi; k.ifaLo = f.ifaLo;
    if (k.ipHi !== 0 || k.ipLo !== 0) this.history.recordOutcome(k, true);
  }

  private readonly device_ = { ip: this.deviceIp, ua: '' };

  /**
   * The device that fired the beacon: the TCP peer, or, when the peer is a trusted proxy,
   * X-Device-IP (VAST 4 SSAI), else the nearest untrusted hop of X-Forwarded-For, and
   * X-Device-User-Agent over User-Agent. Null (with `error` set) on a bad header.
   */
  private device(h: BeaconHeaders): { ip: IpScratch; ua: string } | null {
    const out = this.device_;
    out.ua = h.userAgent;
    if (!parseIpInto(h.peer, this.peerIp)) {
      this.refuse(NO_PEER);
      return null;
    }
    copyIp(this.peerIp, this.deviceIp);
    if (!this.proxies.has(asParsed(this.peerIp))) return out;
    if (h.deviceUa !== '') out.ua = h.deviceUa;
    if (h.deviceIp !== '') {
      if (!parseIpInto(h.deviceIp.trim(), this.deviceIp)) {
        this.refuse(BAD_DEVICE_IP);
        return null;
      }
      return out;
    }
    if (h.forwardedFor === '') return out;
    // From the right: the first hop not in --trusted-proxies is the device (anything left of
    // it was written by the client and proves nothing); all trusted: the leftmost.
    const hops = h.forwardedFor.split(',');
    for (let i = hops.length - 1; i >= 0; i--) {
      if (!parseIpInto(hops[i]!.trim(), this.deviceIp)) {
        this.refuse(BAD_FORWARDED);
        return null;
      }
      if (!this.proxies.has(asParsed(this.deviceIp))) break;
    }
    return out;
  }
}

function copyIp(from: IpScratch, to: IpScratch): void {
  to.v = from.v;
  to.n = from.n;
  to.w.set(from.w);
}
