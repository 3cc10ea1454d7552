// The analytics time series: total, valid, GIVT and SIVT counts on the left axis and the
// IVT rate (percent) on the right, drawn by uPlot on a canvas, in UTC, sized to its box.
import uPlot from 'uplot';
import { formatInt } from './format.ts';
import { axisLabel, type Granularity, type Series } from './series.ts';

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

  show(s: Series, g: Granularity): void {
    this.plot?.destroy();
    const countSeries = (label: string, stroke: string, width = 2): uPlot.Series => ({
      label,
      stroke,
      width,
      scale: 'n',
      value: (_u, v) => (v == null ? '–' : formatInt(v)),
    });
    const opts: uPlot.Options = {
      ...this.size(),
      tzDate: utc,
      cursor: { drag: { x: false, y: false } },
      scales: { x: { time: true }, n: { range: (_u, _min, max) => [0, Math.max(1, max)] }, pct: { range: [0, 100] } },
      axes: [
        { stroke: '#475569', grid: { stroke: '#e2e8f0' }, values: (_u, splits) => splits.map((ts, i) => axisLabel(ts, g, i === 0)) },
        { scale: 'n', stroke: '#475569', grid: { stroke: '#e2e8f0' }, size: 60, values: (_u, ticks) => ticks.map((t) => formatInt(t)) },
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
          value: (_u, v) => (v == null ? '–' : `${v.toFixed(1)}%`),
        },
      ],
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
