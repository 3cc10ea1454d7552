// The one coalescing refresh (src/base/refresh-loop.ts): one run at a time, calls during a run
// answered by one more run after it, failures to the callers, a timer that runs it.
import t from 'tap';
import { CoalescedRun, RefreshLoop } from '../src/base/refresh-loop.ts';

function gate(): { wait: Promise<void>; open(): void } {
  let open = () => {};
  const wait = new Promise<void>((r) => (open = r));
  return { wait, open };
}

t.test('calls during a run share one more run after it', async (t) => {
  let runs = 0;
  let active = 0;
  let most = 0;
  const gates = [gate(), gate(), gate()];
  const c = new CoalescedRun(async () => {
    active++;
    most = Math.max(most, active);
    await gates[runs++]!.wait;
    active--;
  });
  const first = c.run();
  const second = c.run();
  const third = c.run();
  t.equal(second, first, 'a call during a run gets the run in progress');
  t.equal(third, first);
  gates[0]!.open();
  await new Promise((r) => setImmediate(r));
  t.equal(runs, 2, 'one more run started after the first, for both calls made meanwhile');
  gates[1]!.open();
  await first;
  t.equal(runs, 2, 'and no third');
  t.equal(most, 1, 'never two at once');
  gates[2]!.open();
  await c.run();
  t.equal(runs, 3, 'a call after the runs starts a new one');
});

t.test('a failed run rejects its callers; the next call runs again', async (t) => {
  let fail = true;
  let runs = 0;
  const c = new CoalescedRun(async () => {
    runs++;
    if (fail) throw new Error('refused');
  });
  await t.rejects(c.run(), /refused/);
  await c.settled();
  fail = false;
  await c.run();
  t.equal(runs, 2);
});

t.test('RefreshLoop runs at start, on nudge and on its timer; stop ends the timer', async (t) => {
  let runs = 0;
  const loop = new RefreshLoop(async () => {
    runs++;
  }, 20);
  loop.start();
  await loop.settled();
  t.equal(runs, 1, 'start runs at once');
  await new Promise((r) => setTimeout(r, 70));
  t.ok(runs >= 2, `the timer ran it again (${runs})`);
  loop.stop();
  const after = runs;
  await new Promise((r) => setTimeout(r, 60));
  await loop.settled();
  t.equal(runs, after, 'no run after stop');
  loop.nudge();
  await loop.settled();
  t.equal(runs, after + 1, 'nudge runs it');
});
