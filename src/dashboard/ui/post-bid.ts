// "After the bid" on the analytics page: what the impression beacons found for the range
// (impressions by the band the lookups answered and imp_status: GET /v1/report/impressions)
// and the calibration per band (GET /v1/report/calibration): the lookups the customer
// labelled (feedback, the truth), the invalid ones and their share as a bar (a <meter>: the
// CSP allows no inline style); beside them, apart, what the beacons caught. A clean beacon
// is no evidence of a valid lookup, so the two are never added up.
import { BANDS, IMP_STATUSES } from '../../base/enums.ts';
import type { Api, CalibrationReport, ImpressionReport, ReportQuery } from './api-client.ts';
import { clear, h, statusBox } from './dom.ts';
import { formatInt } from './format.ts';

const STATUS_LABELS: Record<string, string> = {
  valid: 'Valid',
  replay: 'Replayed',
  mismatch: 'Another device',
  expired: 'Too late',
};

export function postBidCard(api: Api): { el: HTMLElement; load(q: ReportQuery): Promise<void> } {
  const status = statusBox();
  const impWrap = h('div', { class: 'table-wrap', tabindex: 0, 'aria-label': 'Impressions by band and status' });
  const calWrap = h('div', { class: 'table-wrap', tabindex: 0, 'aria-label': 'Calibration by band' });
  const el = h(
    'section',
    { class: 'card post-bid', 'aria-labelledby': 'post-bid-h' },
    h('div', { class: 'card-head' }, h('h2', { id: 'post-bid-h' }, 'After the bid')),
    h('p', { class: 'hint intro' }, 'What the impression beacons found for the lookups of this range, and how often each band’s lookups you labelled (feedback) turned out invalid: the evidence for your thresholds. The guide “Impressions: what happened after the bid” in ivtd’s documentation says more.'),
    status.el,
    h('h3', {}, 'Impressions'),
    impWrap,
    h('h3', {}, 'Calibration'),
    h('p', { class: 'hint' }, 'Feedback: the lookups you labelled (POST /v1/feedback), the truth the share rests on. Beacons: what they caught invalid (replayed, another device); a clean beacon proves nothing (a bot fires its own), so it never counts as valid.'),
    calWrap,
  );
  let seq = 0;

  async function load(q: ReportQuery): Promise<void> {
    const id = ++seq;
    status.loading('Loading impressions…');
    try {
      const [imps, cal] = await Promise.all([
        api.impressions({ ...q, group_by: ['band', 'imp_status'], limit: 1000, offset: 0 }),
        api.calibration(q.start_date, q.end_date),
      ]);
      if (id !== seq) return;
      renderImpressions(imps);
      renderCalibration(cal);
      status.done();
    } catch (e) {
      if (id !== seq) return;
      clear(impWrap);
      clear(calWrap);
      status.error(`Could not load the impressions: ${(e as Error).message}`, () => void load(q));
    }
  }

  function renderImpressions(r: ImpressionReport): void {
    const count = (band: string, st: string) => r.rows.find((x) => x.band === band && x.imp_status === st)?.impressions ?? 0;
    impWrap.replaceChildren(
      h(
        'table',
        { class: 'impressions' },
        h('thead', {}, h('tr', {}, h('th', { scope: 'col' }, 'Band'), ...IMP_STATUSES.map((s) => h('th', { scope: 'col', class: 'num' }, STATUS_LABELS[s] ?? s)))),
        h('tbody', {}, ...BANDS.map((b) => h('tr', {}, h('th', { scope: 'row' }, b), ...IMP_STATUSES.map((s) => h('td', { class: 'num', 'data-status': s, 'data-label': STATUS_LABELS[s] ?? s }, formatInt(count(b, s))))))),
      ),
    );
  }

  function renderCalibration(c: CalibrationReport): void {
    const LABELS: Record<string, string> = {
      'feedback-labelled': 'Feedback: labelled',
      'feedback-invalid': 'Feedback: invalid',
      'feedback-share': 'Feedback: invalid share',
      'beacon-labelled': 'Beacons: beaconed',
      'beacon-invalid': 'Beacons: caught invalid',
    };
    const cell = (col: string, value: number) => h('td', { class: 'num', 'data-col': col, 'data-label': LABELS[col]! }, formatInt(value));
    calWrap.replaceChildren(
      h(
        'table',
        { class: 'calibration' },
        h(
          'thead',
          {},
          h('tr', {}, h('td', {}), h('th', { scope: 'colgroup', colspan: 3 }, 'Feedback (the truth)'), h('th', { scope: 'colgroup', colspan: 2 }, 'Beacons (invalid evidence only)')),
          h('tr', {}, ...['Band', 'Labelled', 'Invalid', 'Invalid share', 'Beaconed', 'Caught invalid'].map((t, i) => h('th', { scope: 'col', class: i > 0 ? 'num' : '' }, t))),
        ),
        h(
          'tbody',
          {},
          ...c.rows.map((r) =>
            h(
              'tr',
              { 'data-band': r.band },
              h('th', { scope: 'row' }, r.band),
              cell('feedback-labelled', r.by_feedback.labelled),
              cell('feedback-invalid', r.by_feedback.invalid),
              h(
                'td',
                { class: 'num share', 'data-col': 'feedback-share', 'data-label': LABELS['feedback-share']! },
                r.invalid_share === null ? '–' : h('meter', { min: 0, max: 1, value: r.invalid_share, title: `${(r.invalid_share * 100).toFixed(1)} %` }),
                r.invalid_share === null ? '' : ` ${(r.invalid_share * 100).toFixed(1)} %`,
              ),
              cell('beacon-labelled', r.by_beacon.labelled),
              cell('beacon-invalid', r.by_beacon.invalid),
            ),
          ),
        ),
      ),
    );
  }

  return { el, load };
}
