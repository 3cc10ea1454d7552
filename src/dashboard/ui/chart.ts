// The analytics time series: total, valid, GIVT and SIVT counts on the left axis and the
// IVT rate (percent) on the right, drawn by uPlot on a canvas, in UTC, sized to its box.
import uPlot from 'uplot';
import { formatInt } from './format.ts';
import type { DateRange } from './dates.ts';
import { axisLabel, COUNT_INCRS, timeIncrs, xExtent, type Granularity, type Series } from './series.ts';

export const SERIES_COLORS = {
  total: '#334155',
  valid: '#15803d',
  givt: '#b45309',
  sivt: '#b91c1c',
  rate: '#6d28d9',
} as const;

const utc = (ts: number) => uPlot.tzDate(new Date(ts * 1000), 'Etc/UTC');

export class TransactionsChart {
  private plot: uPlot | null = null;
  private readonly resize: ResizeObserver;

  constructor(private readonly box: HTMLElement) {
    this.resize = new ResizeObserver(() => this.fit());
    this.resize.observe(box);
  }

  private size(): { width: number; height: number } {
    const width = Math.max(280, Math.floor(this.box.clientWidth));
    return { width, height: width < 600 ? 220 : 280 };
  }

  private fit(): void {
    if (this.plot) this.plot.setSize(this.size());
  }

  show(s: Series, g: Granularity, range: DateRange): void {
    this.plot?.destroy();
    const [xMin, xMax] = xExtent(range, g);
    // What the x axis says, as drawn (for tests and anyone inspecting the page; the canvas has no text).
    let xLabels: string[] = [];
    const box = this.box;
    // By hour most points are empty: a dot on each hour with traffic keeps a lone busy hour
    // (and its IVT rate, which has no neighbours to draw a line to) visible.
    const dots = (keep: (v: number) => boolean): uPlot.Series['points'] =>
      g === 'hour'
        ? {
            show: true,
            size: 5,
            filter: (u, i) => {
              const out: number[] = [];
              (u.data[i] as Array<number | null>).forEach((v, j) => {
                if (v != null && keep(v)) out.push(j);
              });
              return out;
            },
          }
        : {};
    const countSeries = (label: string, stroke: string, width = 2): uPlot.Series => ({
      label,
      stroke,
      width,
      scale: 'n',
      points: dots((v) => v > 0),
      value: (_u, v) => (v == null ? '–' : formatInt(v)),
    });
    const opts: uPlot.Options = {
      ...this.size(),
      tzDate: utc,
      cursor: { drag: { x: false, y: false } },
      scales: { x: { time: true, range: () => [xMin, xMax] }, n: { range: (_u, _min, max) => [0, Math.max(1, max) * 1.05] }, pct: { range: [0, 100] } },
      axes: [
        {
          stroke: '#475569',
          grid: { stroke: '#e2e8f0' },
          incrs: timeIncrs(g),
          values: (_u, splits) => (xLabels = splits.map((ts, i) => axisLabel(ts, g, i === 0))),
        },
        { scale: 'n', stroke: '#475569', grid: { stroke: '#e2e8f0' }, size: 60, incrs: [...COUNT_INCRS], values: (_u, ticks) => ticks.map((t) => formatInt(t)) },
        { scale: 'pct', side: 1, stroke: SERIES_COLORS.rate, grid: { show: false }, size: 50, values: (_u, ticks) => ticks.map((t) => `${t}%`) },
      ],
      series: [
        { label: g === 'hour' ? 'Hour (UTC)' : 'Day (UTC)', value: (_u, ts) => formatX(ts, g) },
        countSeries('Total', SERIES_COLORS.total, 2.5),
        countSeries('Valid', SERIES_COLORS.valid),
        countSeries('GIVT', SERIES_COLORS.givt),
        countSeries('SIVT', SERIES_COLORS.sivt),
        {
          label: 'IVT rate',
          stroke: SERIES_COLORS.rate,
          width: 1.5,
          dash: [6, 4],
          scale: 'pct',
          points: dots(() => true),
          value: (_u, v) => (v == null ? '–' : `${v.toFixed(1)}%`),
        },
      ],
      hooks: {
        draw: [
          (u) => {
            box.dataset.xLabels = JSON.stringify(xLabels);
            box.dataset.xMin = String(u.scales.x!.min);
            box.dataset.xMax = String(u.scales.x!.max);
          },
        ],
      },
    };
    const data: uPlot.AlignedData = [s.x, s.total, s.valid, s.givt, s.sivt, s.rate];
    this.box.replaceChildren();
    this.plot = new uPlot(opts, data, this.box);
  }

  /** Removes the drawing (e.g. when the data behind it could not be loaded). */
  clear(): void {
    this.plot?.destroy();
    this.plot = null;
    this.box.replaceChildren();
  }

  destroy(): void {
    this.resize.disconnect();
    this.plot?.destroy();
    this.plot = null;
  }
}

function formatX(ts: number | null, g: Granularity): string {
  if (ts == null) return '';
  const iso = new Date(ts * 1000).toISOString();
  return g === 'hour' ? `${iso.slice(0, 10)} ${iso.slice(11, 13)}:00` : iso.slice(0, 10);
}
