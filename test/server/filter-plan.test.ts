// What a reload does to the filters, as planned from the running config and the one read
// again (src/server/filter-reload.ts): by name, the --filter-* options' filter kept whatever
// the file says. The threads themselves: test/filter/reload.test.ts.
import t from 'tap';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ConfigError, resolveConfig, type Config } from '../../src/base/config.ts';
import { planFilters, unchanged } from '../../src/server/filter-reload.ts';

const partner = '123e4567-e89b-12d3-a456-426614174000';
const other = '223e4567-e89b-12d3-a456-426614174000';
const dir = mkdtempSync(join(tmpdir(), 'ivtd-filter-plan-'));
t.teardown(() => rmSync(dir, { recursive: true, force: true }));
const file = join(dir, 'ivtd.json');
const OPTIONS = { filterPort: '9902', filterUpstream: 'http://127.0.0.1:8000/', filterPartner: partner, filterName: 'fixed' };

function load(filters: object[], flags: Record<string, string> = OPTIONS): Config {
  writeFileSync(file, JSON.stringify({ filters }));
  return resolveConfig({ config: file, ...flags }, {});
}
const f = (name: string, port: number, more: object = {}) => ({ name, port, upstream: 'http://10.0.0.1:8000/bid', partner, ...more });

t.test('by name: changed in place, added, removed, moved; unchanged ones left alone', async (t) => {
  const now = load([f('same', 9903), f('tuned', 9904, { mode: 'monitor' }), f('gone', 9905), f('moving', 9906)]);
  const next = load([f('same', 9903), f('tuned', 9904, { partner: other }), f('moving', 9907), f('new', 9905)]);
  const plan = planFilters(now, next);
  t.same(plan.change.map((c) => [c.to.name, c.from.mode, c.to.mode, c.to.partner]), [['tuned', 'monitor', 'block', other]]);
  t.same(plan.add.map((x) => [x.name, x.port]), [['new', 9905]], "a new name (on a port a removed filter held)");
  t.same(plan.remove.map((x) => x.name), ['gone']);
  t.same(plan.move.map((m) => [m.to.name, m.from.port, m.to.port]), [['moving', 9906, 9907]]);
  t.same(plan.next.map((x) => x.name), ['fixed', 'same', 'tuned', 'moving', 'new'], "the options' filter first, then the file's");
  t.ok(unchanged(planFilters(next, load([f('same', 9903), f('tuned', 9904, { partner: other }), f('moving', 9907), f('new', 9905)]))), 'the same file again: nothing to do');
});

t.test("the options' filter is fixed: a changed option waits for a restart; its name or port in the file is refused", async (t) => {
  const now = load([f('a', 9903)]);
  // The file changes the options' mode (a config-file key): diffConfig names it as needing a restart; the running one stays.
  writeFileSync(file, JSON.stringify({ filterMode: 'monitor', filters: [f('a', 9903)] }));
  const next = resolveConfig({ config: file, filterPort: '9902', filterUpstream: 'http://127.0.0.1:8000/', filterPartner: partner, filterName: 'fixed' }, {});
  const plan = planFilters(now, next);
  t.ok(unchanged(plan));
  t.equal(plan.next[0], now.filters[0], "the running options' filter kept as it runs");
  // Its name given up by the options (a changed filterName key) cannot be taken by the file's filter.
  const renamed = load([f('fixed', 9903)], { ...OPTIONS, filterName: 'other' });
  t.throws(() => planFilters(now, renamed), { constructor: ConfigError, message: /the config file's filter "fixed" has the name of the --filter-\* options' filter/ });
  t.throws(() => planFilters(now, load([f('b', 9902)], { ...OPTIONS, filterPort: '9999' })), { constructor: ConfigError, message: /filters "fixed" \(the --filter-\* options'\) and "b" both listen on port 9902/ });
  // Without options: the file's filters alone.
  const bare = load([f('a', 9903)], {});
  t.same(planFilters(bare, load([f('a', 9903), f('fixed', 9902)], {})).add.map((x) => x.name), ['fixed']);
});
