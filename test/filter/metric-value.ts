// A filter test's reading of one series of a served ivtd's /metrics.
import type { TestServer } from '../helpers/server.ts';

/** The value of the series `name` whose labels include `labels` (0 when there is none). */
export async function metricValue(s: TestServer, name: string, labels: Record<string, string>): Promise<number> {
  const text = await (await fetch(`${s.metrics}/metrics`)).text();
  const want = Object.entries(labels).map(([k, v]) => `${k}="${v}"`);
  for (const line of text.split('\n')) {
    if (!line.startsWith(name + '{')) continue;
    if (want.every((w) => line.includes(w))) return Number(line.slice(line.lastIndexOf(' ') + 1));
  }
  return 0;
}
