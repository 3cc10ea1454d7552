// `ivtd serve` refuses a filter it cannot run before any listener opens: one or two of the
// three --filter-* options, a partner no customer of the data dir has, or a --memory-budget
// too small for its thread and its held bytes.
import t from 'tap';
import { ConfigError, resolveConfig } from '../../src/base/config.ts';
import { checkFilters } from '../../src/server/check-filters.ts';
import { openStore } from '../helpers/store.ts';
import { createCustomer } from '../../src/store/customers.ts';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runIvtd } from '../cli/run-cli.ts';

t.test('half the options, or an unknown partner: refused, saying what to fix', async (t) => {
  const store = await openStore(t);
  const c = await createCustomer(store, { name: 'Co', username: 'someone', password: 'correct horse battery' });
  await t.rejects(checkFilters(resolveConfig({ filterPort: '9902', filterPartner: c.partner_id }, {}), store), { constructor: ConfigError, message: /needs --filter-port, --filter-upstream and --filter-partner together/ });
  const other = '123e4567-e89b-12d3-a456-426614174000';
  const flags = { filterPort: '9902', filterUpstream: 'http://127.0.0.1:8000/' };
  await t.rejects(checkFilters(resolveConfig({ ...flags, filterPartner: other }, {}), store), { constructor: ConfigError, message: `filter filter: no customer has partner ID ${other}` });
  await t.resolves(checkFilters(resolveConfig({ ...flags, filterPartner: c.partner_id.toUpperCase() }, {}), store), 'a known partner, in either case');
  await t.resolves(checkFilters(resolveConfig({ ...flags, filterPartner: other, role: 'edge', clickhouseUrl: 'http://ch:8123/' }, {}), store), 'an edge knows customers only by their keys: not checked');
});

t.test('filters count in --memory-budget: the default rises with them, a budget too small is refused saying what it takes', async (t) => {
  const flags = { filterPort: '9902', filterUpstream: 'http://127.0.0.1:8000/', filterPartner: '123e4567-e89b-12d3-a456-426614174000' };
  t.equal(resolveConfig({ threads: '2' }, {}).memoryBudget, 256, 'no filter: as before');
  t.equal(resolveConfig({ ...flags, threads: '2' }, {}).memoryBudget, 336, 'one filter: the default rises by its 80 MB');
  const dir = mkdtempSync(join(tmpdir(), 'ivtd-filter-budget-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const file = join(dir, 'ivtd.json');
  const entry = (name: string, port: number) => ({ name, port, upstream: 'http://127.0.0.1:8000/bid', partner: flags.filterPartner });
  writeFileSync(file, JSON.stringify({ threads: 2, filters: [entry('a', 9903), entry('b', 9904)] }));
  t.equal(resolveConfig({ ...flags, config: file }, {}).memoryBudget, 496, 'three filters (the flags\' and the file\'s two): 256 + 3 × 80');
  t.equal(resolveConfig({ ...flags, config: file, memoryBudget: '1024' }, {}).memoryBudget, 1024, 'a larger budget given: kept');
  t.throws(() => resolveConfig({ ...flags, threads: '2', memoryBudget: '300' }, {}), {
    constructor: ConfigError,
    message:
      "--memory-budget: memory-budget 300 MB is less than ivtd takes with --threads 2 and 1 filter before any traffic: 336 MB (V8 heaps 64 + 24 per lookup thread, C heaps 24 + 12 per lookup thread, DuckDB's pool 48, the smallest tables 48, per filter 80 (its thread's V8 heap 32, C heap 16, requests and answers held 32)). Give --memory-budget 336 or more, or fewer --threads or filters.",
  });

  // The real entry point, the way an operator starts it: refused before anything opens.
  const run = await runIvtd(['serve', '--data-dir', dir, '--config', file, '--threads', '2', '--memory-budget', '400', '--prebid-port', '0', '--api-port', '0', '--reporting-port', '0', '--metrics-port', '0']);
  t.not(run.code, 0, 'the process exits with an error');
  t.match(run.stderr + run.stdout, /memory-budget 400 MB is less than ivtd takes with --threads 2 and 2 filters before any traffic: 416 MB .*Give --memory-budget 416 or more, or fewer --threads or filters\./, 'saying what it takes');
});
