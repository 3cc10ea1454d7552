// Bounds how many reports run at once (each DuckDB query takes a core), so a burst of
// reports queues instead of taking the lookup threads' CPU. Past `maxQueued` waiting,
// a report is refused with 429 rather than queued without end.
import { tooManyRequests } from '../http/throttle.ts';

export class ConcurrencyGate {
  private active = 0;
  private readonly waiting: Array<() => void> = [];

  constructor(
    readonly limit: number,
    readonly maxQueued: number,
  ) {}

  async run<T>(fn: () => Promise<T>): Promise<T> {
    if (this.active < this.limit) this.active++;
    else {
      if (this.waiting.length >= this.maxQueued) {
        throw tooManyRequests('Reporting is busy with other reports; retry in a second.', 1);
      }
      // The finishing report hands its slot straight to the next in line.
      await new Promise<void>((resolve) => this.waiting.push(resolve));
    }
    try {
      return await fn();
    } finally {
      const next = this.waiting.shift();
      if (next) next();
      else this.active--;
    }
  }

  get queued(): number {
    return this.waiting.length;
  }
}
