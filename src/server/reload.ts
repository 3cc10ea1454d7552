// The SIGHUP path of `ivtd serve` (and `ivtd reload`): the config read again, the live
// options, the TLS pair and the filters taken, the data files reloaded; all or nothing.
import { diffConfig, type Config } from '../base/config.ts';
import { planTlsReload, type TlsPair } from '../http/tls.ts';
import { log } from '../base/log.ts';
import type { ReloadOutcome } from '../provisioning/operations.ts';
import type { RunningServer } from './running.ts';
import { logTlsPair } from './listeners.ts';
import { planFilters, startFilters, unchanged, type FilterPlan, type StartedFilters } from './filter-reload.ts';

/**
 * SIGHUP: re-reads the config, then the data files with it. All or nothing: a config that
 * does not resolve, a value the logger refuses, a data file that does not load, or any other
 * failure keeps the running config and data, and is logged. Options other than the live
 * ones are named as needing a restart.
 */
export async function reloadAll(s: RunningServer, config: Config, reread: (() => Promise<Config>) | undefined, cause: string): Promise<ReloadOutcome> {
  log.info(`${cause}: reloading config and data files`);
  let next: Config = config;
  if (reread) {
    try {
      next = await reread();
    } catch (e) {
      log.error({ err: (e as Error).message }, 'config reload refused: keeping the running config and data');
      return { ok: false, errors: [(e as Error).message], changed: [], restart: [] };
    }
  }
  // A default budget risen to another count of filters is no change the operator made (the plan stays as made at start).
  if (next.memoryBudgetDefault === true && config.memoryBudgetDefault === true) next = { ...next, memoryBudget: config.memoryBudget };
  const { live, restart } = diffConfig(config, next);
  // Filters (src/server/filter-reload.ts): the new set checked before anything changes.
  let filters: FilterPlan;
  try {
    filters = planFilters(config, next);
  } catch (e) {
    log.error({ err: (e as Error).message }, 'config reload refused: keeping the running config, data and filters');
    return { ok: false, errors: [(e as Error).message], changed: [], restart: [] };
  }
  // TLS: the pair is read again (renewed in place?) and checked before anything changes.
  let tlsNext: TlsPair | null;
  try {
    const plan = await planTlsReload(s.tls, next);
    tlsNext = plan.pair;
    // Turning TLS on or off takes a restart: the listeners keep what they serve.
    if (plan.restartOnly) {
      for (const k of ['tlsCert', 'tlsKey'] as const) {
        if (!live.includes(k)) continue;
        live.splice(live.indexOf(k), 1);
        restart.push(k);
      }
    }
  } catch (e) {
    log.error({ err: (e as Error).message }, 'config reload refused: keeping the running config, data and TLS certificate');
    return { ok: false, errors: [(e as Error).message], changed: [], restart: [] };
  }
  const candidate: Config = { ...config };
  for (const key of live) (candidate as unknown as Record<string, unknown>)[key] = next[key];
  const level = log.level;
  try {
    log.level = candidate.logLevel;
  } catch (e) {
    log.error({ err: (e as Error).message }, 'config reload refused: keeping the running config and data');
    return { ok: false, errors: [(e as Error).message], changed: [], restart: [] };
  }
  // New filters' threads start (and are stopped again if the data is refused); nothing else changes yet.
  let started: StartedFilters;
  try {
    started = await startFilters(filters, config, s.store, s.lookups);
  } catch (e) {
    log.level = level;
    log.error({ err: (e as Error).message }, 'config reload refused: keeping the running config, data and filters');
    return { ok: false, errors: [(e as Error).message], changed: [], restart: [] };
  }
  candidate.filters = filters.next;
  let result: Awaited<ReturnType<RunningServer['reload']>>;
  try {
    result = await s.reload(candidate);
  } catch (e) {
    result = { ok: false, errors: [(e as Error).message] };
  }
  if (!result.ok) {
    await started.undo();
    log.level = level;
    if (live.length || restart.length || !unchanged(filters)) log.error({ errors: result.errors }, 'config reload refused with the data: keeping the running config and filters');
    return { ok: false, errors: result.errors, changed: [], restart: [] };
  }
  Object.assign(config, candidate);
  const filterChanges = await started.finish().catch((e: Error) => {
    log.error({ err: e.message }, 'filters: the reload was applied, but changing them failed part way (a bug: please report it)');
    return [`filters: ${e.message}`];
  });
  if (tlsNext && s.tls) {
    s.tls.use(tlsNext);
    logTlsPair(tlsNext, 'TLS certificate reloaded: new connections use it');
  }
  if (live.length) log.info({ changed: live }, 'config reloaded');
  if (restart.length) log.warn({ changed: restart }, 'config changes that take effect only after a restart');
  return { ok: true, errors: [], changed: [...live, ...filterChanges], restart };
}
