// The tag rule's "is this HTML?" check: the same answers as the regex it replaced, in time
// linear in the tag's length (the regex took seconds on a 60 KB `<a<a<a…`).
import t from 'tap';
import { TAG_MAX_BYTES, looksLikeHtml, parseProjectCreate } from '../../src/account/project-fields.ts';

t.test('looksLikeHtml: elements, comments and end tags; not bare angle brackets', async (t) => {
  const yes = ['<script src="https://a.example/t.js"></script>', '<iframe>', '<!-- c -->', '</div>', 'text <b>bold</b>', '<a\nhref=x>', '<<a>', '< <a >'];
  const no = ['', 'plain words', '<', '<>', '< a>', '<1>', '<a', 'a > b < c', '> <a', '<a<a<a', '<=>', 'x<é>'];
  for (const s of yes) t.ok(looksLikeHtml(s), JSON.stringify(s));
  for (const s of no) t.notOk(looksLikeHtml(s), JSON.stringify(s));
});

t.test('looksLikeHtml agrees with /<[A-Za-z!/][^>]*>/ on random short strings', async (t) => {
  const old = /<[A-Za-z!/][^>]*>/;
  const alphabet = ['<', '>', 'a', 'Z', '!', '/', ' ', '1', '\n', 'é'];
  let seed = 12345;
  const rand = (n: number) => {
    seed = (seed * 1103515245 + 12345) & 0x7fffffff;
    return seed % n;
  };
  let disagreements = 0;
  for (let i = 0; i < 20_000; i++) {
    let s = '';
    for (let n = rand(12); n > 0; n--) s += alphabet[rand(alphabet.length)];
    if (looksLikeHtml(s) !== old.test(s)) disagreements++;
  }
  t.equal(disagreements, 0);
});

t.test('a 60 KB tag of `<a<a<a…` is judged in linear time', async (t) => {
  const tag = '<a'.repeat(TAG_MAX_BYTES / 2); // the largest tag the rule reads; the old regex took ~5 s on it
  const started = process.hrtime.bigint();
  const plain = looksLikeHtml(tag);
  let refusal: unknown;
  try {
    parseProjectCreate({ name: 'n', demand_id: 'd', tag });
  } catch (e) {
    refusal = e;
  }
  const closed = looksLikeHtml(tag + '>');
  const ms = Number(process.hrtime.bigint() - started) / 1e6;
  t.notOk(plain);
  t.match(refusal, { field: 'tag', status: 422 }, 'refused as not HTML');
  t.ok(closed, 'one closing bracket at the end makes it markup');
  // Linear: well under a millisecond per call here; 100 ms leaves room for a loaded machine.
  t.ok(ms < 100, `three checks of a ${tag.length}-character tag took ${ms.toFixed(2)} ms`);
});
