// Start step of `ivtd serve` for its filters (src/filter/): what can be found wrong before any
// listener opens is refused here, with the sentence to fix it. A reload checks the filters it
// starts or changes the same way (src/server/filter-reload.ts).
import { ConfigError, type Config } from '../base/config.ts';
import { findCustomer } from '../store/customer-ref.ts';
import type { Store } from '../store/db.ts';
import { incompleteFilter, type FilterSettings } from '../base/filter-settings.ts';

/**
 * The --filter-* options all given or none; each filter's partner a customer of this data dir
 * (an edge knows customers only by the keys the fleet sends: there, a partner without a live
 * key has its requests sent on unjudged, counted as unknown_partner).
 */
export async function checkFilters(config: Config, store: Store): Promise<void> {
  const half = incompleteFilter(config);
  if (half !== undefined) throw new ConfigError(half);
  await checkPartners(config.filters, config, store);
}

/** Each filter's partner a customer of this data dir (not checked on an edge). */
export async function checkPartners(filters: readonly FilterSettings[], config: Config, store: Store): Promise<void> {
  if (config.role === 'edge') return;
  for (const f of filters) {
    const c = await findCustomer(store, f.partner);
    if (c === undefined || c.partner_id !== f.partner) throw new ConfigError(`filter ${f.name}: no customer has partner ID ${f.partner} (\`ivtd customer list\` shows them)`);
  }
}
