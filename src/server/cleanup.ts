// What a start opened, to close in reverse order: on a clean stop (every step runs, lost
// counts fail the stop last) or when a later start step fails (undo, under a guard timer).
import { log } from '../base/log.ts';
import { CountsLostError } from '../reporting/writer.ts';

export type CleanupStep = () => Promise<void> | void;

export class Cleanup {
  private readonly steps: CleanupStep[];

  constructor(first: CleanupStep) {
    this.steps = [first];
  }

  /** Runs before everything added earlier (the last thing opened closes first). */
  add(step: CleanupStep): void {
    this.steps.unshift(step);
  }

  /**
   * The stop: every step runs; counts that could be neither written nor spooled then fail
   * the stop (serve exits 1), after the rest has closed.
   */
  async stop(): Promise<void> {
    let lost: CountsLostError | null = null;
    for (const fn of this.steps.splice(0)) {
      try {
        await fn();
      } catch (e) {
        log.error({ err: (e as Error).message }, 'error during shutdown');
        if (e instanceof CountsLostError) lost = e;
      }
    }
    if (lost) throw lost;
  }

  /**
   * A failed start: undo what started, errors ignored (the caller fails with the start's
   * error). A ref'd timer keeps Node alive while a step still waits on an unref'd one (a retry
   * sleep), so the error is always reported and the exit is never a silent 0; a step still
   * hanging after 10 s is left.
   */
  async undo(): Promise<void> {
    let guard: NodeJS.Timeout | undefined;
    const undo = (async () => {
      for (const fn of this.steps.splice(0)) await Promise.resolve(fn()).catch(() => undefined);
    })();
    await Promise.race([undo, new Promise((r) => (guard = setTimeout(r, 10_000)))]);
    clearTimeout(guard);
  }
}
