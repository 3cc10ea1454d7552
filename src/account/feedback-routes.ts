// POST /v1/feedback (account port, Bearer): labels a customer learns after the fact (a DSP
// chargeback, a fraud audit) for lookups it made, by lid: {"labels":[{"lid","label":
// "invalid"|"valid","source"}]}. Each lid must be genuine and the customer's own; the
// request is taken whole or refused whole (422 naming the first bad item). A label is kept
// (the latest per lid wins: the calibration report reads them) and feeds the shared history
// like a beacon: `invalid` is evidence against the lookup's IP, uid and IFA, `valid` for them.
import { HttpError } from '../base/errors.ts';
import { readJsonObject, sendJson, type Router } from '../http/router.ts';
import { timestampValue, type DuckDBValue } from '@duckdb/node-api';
import type { Store } from '../store/db.ts';
import { oneAtATime, retryConflicts } from '../store/serial.ts';
import { LidCodec, emptyLidFacts, type LidFacts } from '../prebid/lid.ts';
import { emptyKeys, type History } from '../signals/history.ts';
import type { SessionGuard } from './session-guard.ts';

export const FEEDBACK_PATH = '/v1/feedback';
/** Labels per request at most. */
export const MAX_LABELS = 1000;
/** Characters of `source` kept at most. */
export const MAX_SOURCE = 100;
const BODY_LIMIT = 512 * 1024;
export const LABELS = ['invalid', 'valid'] as const;

export interface FeedbackOptions {
  store: Store;
  sessions: SessionGuard;
  lidSecret: Uint8Array;
  /** The lookup threads' shared history (the main thread writes to it as they do). */
  history: History;
}

interface Label {
  facts: LidFacts;
  tag: string;
  label: (typeof LABELS)[number];
  source: string;
}

const unprocessable = (message: string) => new HttpError('unprocessable', message, 422);

/** Checks every item; the first bad one is the 422. */
function parseLabels(body: Record<string, unknown>, customerId: string, codec: LidCodec): Label[] {
  for (const k of Object.keys(body)) if (k !== 'labels') throw unprocessable(`Unknown field "${k}": the body is {"labels":[{"lid","label","source"}]}.`);
  const list = body.labels;
  if (!Array.isArray(list) || list.length === 0) throw unprocessable('labels must be a non-empty array of {"lid","label","source"}.');
  if (list.length > MAX_LABELS) throw unprocessable(`labels holds ${list.length} items; send at most ${MAX_LABELS} per request.`);
  const out: Label[] = [];
  list.forEach((item: unknown, i: number) => {
    const at = `labels[${i}]`;
    if (!item || typeof item !== 'object' || Array.isArray(item)) throw unprocessable(`${at} must be an object {"lid","label","source"}.`);
    const o = item as Record<string, unknown>;
    for (const k of Object.keys(o)) if (k !== 'lid' && k !== 'label' && k !== 'source') throw unprocessable(`${at}: unknown field "${k}".`);
    if (typeof o.lid !== 'string') throw unprocessable(`${at}.lid must be the lid string of a lookup answer.`);
    if (o.label !== 'invalid' && o.label !== 'valid') throw unprocessable(`${at}.label must be "invalid" or "valid".`);
    if (typeof o.source !== 'string' || o.source === '' || o.source.length > MAX_SOURCE) {
      throw unprocessable(`${at}.source must be a non-empty string of at most ${MAX_SOURCE} characters (e.g. "chargeback").`);
    }
    // Shown on the dashboard and in reports as sent: no control characters (as a project's names).
    if (/\p{Cc}/u.test(o.source)) throw unprocessable(`${at}.source must not contain control characters.`);
    const facts = emptyLidFacts();
    const why = codec.read(o.lid, facts);
    if (why !== '') throw unprocessable(`${at}.lid is not a lookup id of this service (${why === 'signature' ? 'its signature does not match' : 'malformed'}).`);
    if (facts.customerId !== customerId) throw unprocessable(`${at}.lid belongs to another customer: label only your own lookups.`);
    out.push({ facts, tag: facts.tagHi.toString(16).padStart(8, '0') + facts.tagLo.toString(16).padStart(8, '0'), label: o.label, source: o.source });
  });
  return out;
}

/** The last label of each lid, in the order sent (one statement may not replace a row twice). */
function latestPerLid(labels: Label[]): Label[] {
  const byTag = new Map<string, Label>();
  for (const l of labels) {
    byTag.delete(l.tag);
    byTag.set(l.tag, l);
  }
  return [...byTag.values()];
}

export function mountFeedbackRoutes(router: Router, opts: FeedbackOptions): void {
  const codec = new LidCodec(opts.lidSecret);
  const keys = emptyKeys();
  router.post(FEEDBACK_PATH, async (ctx) => {
    const s = await opts.sessions.requireSession(ctx);
    const body = await readJsonObject(ctx.req, { limit: BODY_LIMIT }).catch((e: unknown) => {
      if (e instanceof HttpError && e.code === 'payload_too_large') {
        throw new HttpError('payload_too_large', `The feedback body is larger than it may be: at most ${BODY_LIMIT} bytes, and at most ${MAX_LABELS} labels per request; send the rest in another request.`);
      }
      throw e;
    });
    const labels = parseLabels(body, s.customer_id, codec);
    // A customer's labels are stored one batch at a time: two batches labelling the same
    // lookup (a retry, a duplicate post) would replace the same row at once, a write conflict.
    const store = opts.store;
    // One statement for the whole batch: a statement per label inside one transaction ran
    // DuckDB past its memory limit from about 200 labels at the 48 MB store budget.
    const rows = latestPerLid(labels);
    const params: DuckDBValue[] = [s.customer_id];
    const values = rows.map((l) => {
      const at = params.length;
      params.push(l.tag, timestampValue(BigInt(l.facts.at) * 1000n), l.facts.band, l.label, l.source);
      return `($1, $${at + 1}, $${at + 2}, $${at + 3}, $${at + 4}, $${at + 5}, current_timestamp)`;
    });
    await oneAtATime(store, `feedback ${s.customer_id}`, () => retryConflicts(() => store.run(
      `INSERT OR REPLACE INTO feedback_labels (customer_id, lid_tag, lookup_at, band, label, source, received_at) VALUES ${values.join(', ')}`,
      params,
    )));
    // Stored first: a label the store refused teaches nothing.
    let invalid = 0;
    for (const l of labels) {
      const f = l.facts;
      keys.ipHi = f.ipHi; keys.ipLo = f.ipLo; keys.uidHi = f.uidHi; keys.uidLo = f.uidLo; keys.ifaHi = f.ifaHi; keys.ifaLo = f.ifaLo;
      if (l.label === 'invalid') invalid++;
      if (f.ipHi !== 0 || f.ipLo !== 0) opts.history.recordOutcome(keys, l.label === 'invalid');
    }
    sendJson(ctx.res, 200, { accepted: labels.length, invalid, valid: labels.length - invalid });
  });
}
