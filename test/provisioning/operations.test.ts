// The operations the CLI and the control socket run, called as a socket client may call
// them: with arguments the CLI would never send.
import t from 'tap';
import { runOperation } from '../../src/provisioning/operations.ts';
import { createCustomer } from '../../src/store/customers.ts';
import { getPolicy } from '../../src/policy/manage.ts';
import { openStore, rejectsWith } from '../helpers/store.ts';

t.test('policy.import without an entries array changes nothing, with --replace or without', async (t) => {
  const store = await openStore(t);
  const c = await createCustomer(store, { name: 'Acme', username: 'acme', password: 'password1' });
  const entries = [{ kind: 'ip', value: '192.0.2.0/24', action: 'deny' }, { kind: 'app', value: 'com.example.app', action: 'allow' }];
  await runOperation(store, 'policy.import', { customer: 'acme', entries });
  for (const args of [{ replace: true }, { replace: true, entries: null }, { replace: true, entries: 'x' }, { entries: { kind: 'ip' } }, {}]) {
    await rejectsWith(t, runOperation(store, 'policy.import', { customer: 'acme', ...args }), 'invalid', /entries must be an array/);
    t.equal((await getPolicy(store, c.customer_id)).entries.length, 2, `${JSON.stringify(args)}: the policy keeps its entries`);
  }
  const emptied = await runOperation(store, 'policy.import', { customer: 'acme', replace: true, entries: [] });
  t.match(emptied, { entries: 0 }, 'an empty list given on purpose still replaces');
});
