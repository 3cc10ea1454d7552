// src/store/serial.ts: writes of one key run one at a time, in the order they came, a failure
// not stopping the next; write conflicts are retried, other failures are not.
import t from 'tap';
import { CONFLICT_RETRIES, isWriteConflict, oneAtATime, retryConflicts } from '../../src/store/serial.ts';
import { StoreError } from '../../src/store/store-error.ts';

const tick = () => new Promise((r) => setTimeout(r, 2));

t.test('one key: one at a time, in order, through failures; other keys and owners do not wait', async (t) => {
  const owner = {};
  const log: string[] = [];
  let running = 0;
  let most = 0;
  const job = (name: string, fail = false) => async () => {
    running++;
    most = Math.max(most, running);
    log.push(`start ${name}`);
    await tick();
    log.push(`end ${name}`);
    running--;
    if (fail) throw new Error(`${name} failed`);
    return name;
  };
  const a = oneAtATime(owner, 'k', job('a'));
  const b = oneAtATime(owner, 'k', job('b', true));
  const c = oneAtATime(owner, 'k', job('c'));
  t.equal(await a, 'a');
  await t.rejects(b, /b failed/, 'a failure is its caller\'s');
  t.equal(await c, 'c', 'and the next one still runs');
  t.same(log, ['start a', 'end a', 'start b', 'end b', 'start c', 'end c']);
  t.equal(most, 1, 'never two at once');

  const order: string[] = [];
  let release!: () => void;
  const held = oneAtATime(owner, 'k', () => new Promise<void>((r) => (release = r)));
  const other = oneAtATime(owner, 'other', async () => order.push('other key'));
  const otherOwner = oneAtATime({}, 'k', async () => order.push('other owner'));
  await Promise.all([other, otherOwner]);
  t.same(order.sort(), ['other key', 'other owner'], 'did not wait for the held key');
  release();
  await held;
});

t.test('write conflicts are retried up to CONFLICT_RETRIES runs; anything else fails at once', async (t) => {
  t.ok(isWriteConflict(new Error('TransactionContext Error: Conflict on update!')));
  t.ok(isWriteConflict(new Error('Catalog write-write conflict on create with "x"')));
  t.notOk(isWriteConflict(new StoreError('conflict', 'username "a" is already taken')), 'a StoreError is an answer, not a race');
  t.notOk(isWriteConflict(new Error('disk full')));

  let runs = 0;
  t.equal(await retryConflicts(async () => (++runs < 3 ? Promise.reject(new Error('Conflict on update!')) : 'done')), 'done');
  t.equal(runs, 3, 'run again until it went through');

  runs = 0;
  await t.rejects(retryConflicts(async () => { runs++; throw new Error('Conflict on update!'); }), /Conflict/);
  t.equal(runs, CONFLICT_RETRIES, 'given up after CONFLICT_RETRIES runs');

  runs = 0;
  await t.rejects(retryConflicts(async () => { runs++; throw new Error('disk full'); }), /disk full/);
  t.equal(runs, 1, 'another failure is not retried');
});
