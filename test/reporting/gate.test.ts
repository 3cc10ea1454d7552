// Reports run one at a time within the DuckDB thread budget; bursts queue, then get 429.
import t from 'tap';
import { HttpError } from '../../src/base/errors.ts';
import { ConcurrencyGate } from '../../src/reporting/gate.ts';
import { storeThreads } from '../../src/reporting/service.ts';

t.test('the gate runs at most `limit` at once, in arrival order, and refuses past the queue', async (t) => {
  const gate = new ConcurrencyGate(1, 2);
  let running = 0;
  let peak = 0;
  const order: number[] = [];
  const job = (n: number) => () =>
    new Promise<number>((resolve) => {
      running++;
      peak = Math.max(peak, running);
      order.push(n);
      setTimeout(() => {
        running--;
        resolve(n);
      }, 20);
    });
  const first = gate.run(job(1));
  const second = gate.run(job(2));
  const third = gate.run(job(3));
  t.equal(gate.queued, 2);
  const refused = await gate.run(job(4)).catch((e: unknown) => e);
  t.ok(refused instanceof HttpError && refused.status === 429 && refused.headers?.['Retry-After'] === '1', 'a full queue answers 429');
  t.same(await Promise.all([first, second, third]), [1, 2, 3]);
  t.equal(peak, 1, 'never two at once');
  t.same(order, [1, 2, 3]);
  const failing = gate.run(() => Promise.reject(new Error('boom')));
  await t.rejects(failing, /boom/);
  t.equal(await gate.run(async () => 'free'), 'free', 'a failed job frees its slot');
});

t.test('DuckDB gets the cores the lookup threads and the main thread leave', async (t) => {
  t.equal(storeThreads(1, 2), 1);
  t.equal(storeThreads(1, 8), 6);
  t.equal(storeThreads(4, 4), 1, 'never less than one');
});
