// The lookup path says "no" in one shape: an ErrorAnswer, written by errorJson() alone
// (src/base/errors.ts), never an error body put together by hand.
import t from 'tap';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { errorJson } from '../../src/base/errors.ts';

const SRC = join(import.meta.dirname, '..', '..', 'src');

t.test('errorJson writes {"error","message"} and nothing else', async (t) => {
  t.equal(errorJson({ status: 405, code: 'method_not_allowed', message: 'Use GET for lookups.' }), '{"error":"method_not_allowed","message":"Use GET for lookups."}');
});

t.test('no file of the lookup path builds an error body itself', async (t) => {
  const files = ['prebid', 'prebid/ortb'].flatMap((dir) => readdirSync(join(SRC, dir)).filter((f) => f.endsWith('.ts')).map((f) => join(dir, f)));
  t.ok(files.includes(join('prebid', 'worker.ts')) && files.includes(join('prebid/ortb', 'body.ts')), 'the files are found');
  for (const f of files) {
    const text = readFileSync(join(SRC, f), 'utf8');
    t.notMatch(text, /JSON\.stringify\(\s*\{\s*error\b/, `${f}: error bodies through errorJson()`);
  }
});
