// One way to run a refresh that may be asked for again while it runs (a key set or policies
// to publish or pull, policies to recompile): one run at a time, and calls during a run are
// answered by one more run after it, however many came, so whoever asked waits for a run
// that started after its call. RefreshLoop adds the timer that runs it every interval.

export class CoalescedRun {
  private running: Promise<void> | null = null;
  private again = false;

  constructor(private readonly work: () => Promise<void>) {}

  /** Runs the work now, or once more after the run in progress; rejects when the (last) run failed. */
  run(): Promise<void> {
    if (this.running) {
      this.again = true;
      return this.running;
    }
    const r = (async () => {
      do {
        this.again = false;
        await this.work();
      } while (this.again);
    })().finally(() => {
      this.running = null;
    });
    this.running = r;
    return r;
  }

  /** Resolves when a run in progress has ended (its failure ignored). */
  async settled(): Promise<void> {
    await this.running?.catch(() => undefined);
  }
}

export class RefreshLoop extends CoalescedRun {
  private timer: NodeJS.Timeout | null = null;

  constructor(
    work: () => Promise<void>,
    private readonly intervalMs: number,
  ) {
    super(work);
  }

  /** Runs now, then every interval (the timer does not keep Node alive). */
  start(): void {
    this.nudge();
    this.timer = setInterval(() => this.nudge(), this.intervalMs);
    this.timer.unref();
  }

  /** Runs soon; a failure is the work's to log, and the timer tries again. */
  nudge(): void {
    void this.run().catch(() => undefined);
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
  }
}
