import t from 'tap';
import { isWholeNumberIn, parseWholeNumber } from '../src/base/whole-number.ts';

t.test('parseWholeNumber: decimal digits, an optional minus, safe integers only', async (t) => {
  t.equal(parseWholeNumber('42'), 42);
  t.equal(parseWholeNumber('-7'), -7);
  t.equal(parseWholeNumber('007'), 7, 'leading zeros are digits');
  t.ok(Object.is(parseWholeNumber('-0'), 0), '-0 is 0');
  t.equal(parseWholeNumber(String(Number.MAX_SAFE_INTEGER)), Number.MAX_SAFE_INTEGER);
  for (const bad of ['', '-', '+1', '1.0', '1e3', ' 1', '1 ', '0x10', '٣', '9007199254740993', 'NaN']) {
    t.equal(parseWholeNumber(bad), undefined, JSON.stringify(bad));
  }
});

t.test('isWholeNumberIn: a JSON number within bounds', async (t) => {
  t.ok(isWholeNumberIn(0, 0, 10));
  t.ok(isWholeNumberIn(10, 0, 10));
  t.notOk(isWholeNumberIn(11, 0, 10));
  t.notOk(isWholeNumberIn(-1, 0, 10));
  t.notOk(isWholeNumberIn(1.5, 0, 10));
  t.notOk(isWholeNumberIn('5', 0, 10), 'text is not a number');
  t.notOk(isWholeNumberIn(undefined, 0, 10));
  t.notOk(isWholeNumberIn(Number.NaN, 0, 10));
});
