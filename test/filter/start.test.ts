// `ivtd serve` refuses a filter it cannot run before any listener opens: one or two of the
// three --filter-* options, or a partner no customer of the data dir has.
import t from 'tap';
import { ConfigError, resolveConfig } from '../../src/base/config.ts';
import { checkFilters } from '../../src/server/check-filters.ts';
import { openStore } from '../helpers/store.ts';
import { createCustomer } from '../../src/store/customers.ts';

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
