// Filters on reload (SIGHUP, `ivtd reload`; docs/filter.md "Change filters without a restart"):
// the config file's `filters` compared with the running ones by name. Same name, same port: the
// settings change in place on its thread (no connection dropped). A new name: a thread starts.
// A name gone: its thread stops taking connections, answers what is under way, and ends. Same
// name, another port: the old stops, a new one starts. The --filter-* options' filter is fixed
// for the process's life.
//
// All or nothing with the rest of the reload (src/server/reload.ts): planFilters checks the new
// set (names, ports, partners, ports free) before anything changes; startFilters starts the new
// threads, which `undo` stops again if the data reload that follows is refused; only then does
// `finish` change settings in place and stop the filters that went. A new filter that takes the
// port of one that went can only start after it stopped: that start alone comes last, and,
// should the port still be taken, it is retried as a failed thread is.
import { createServer } from 'node:net';
import { ConfigError, type Config } from '../base/config.ts';
import { filterDifferences, optionsFilterGiven, type FilterSettings } from '../base/filter-settings.ts';
import { log } from '../base/log.ts';
import type { Store } from '../store/db.ts';
import { checkPartners } from './check-filters.ts';
import type { LookupServer } from './lookup-threads.ts';

/** What a reload does to the filters. */
export interface FilterPlan {
  /** The filters once it is done (config.filters then). */
  next: FilterSettings[];
  /** New names. */
  add: FilterSettings[];
  /** Names gone (their settings as they run). */
  remove: FilterSettings[];
  /** Same name, another port: stopped, then started on the new one. */
  move: Array<{ from: FilterSettings; to: FilterSettings }>;
  /** Same name, same port, other settings: changed in place. */
  change: Array<{ from: FilterSettings; to: FilterSettings }>;
}

/** The running filters and those of the config file read again: what changes, or ConfigError saying why the new set cannot run. */
export function planFilters(current: Config, next: Config): FilterPlan {
  const fixed = optionsFilterGiven(current) ? current.filters[0] : undefined;
  const running = fixed ? current.filters.slice(1) : current.filters;
  const wanted = optionsFilterGiven(next) ? next.filters.slice(1) : next.filters;
  if (fixed) {
    for (const f of wanted) {
      if (f.name === fixed.name) throw new ConfigError(`the config file's filter "${f.name}" has the name of the --filter-* options' filter, which a reload cannot change (the options hold for the process's life): give the file's filter another name`);
      if (f.port !== 0 && f.port === fixed.port) throw new ConfigError(`filters "${fixed.name}" (the --filter-* options') and "${f.name}" both listen on port ${f.port}: give each its own port`);
    }
  }
  const plan: FilterPlan = { next: fixed ? [fixed, ...wanted] : [...wanted], add: [], remove: [], move: [], change: [] };
  const byName = new Map(running.map((f) => [f.name, f]));
  for (const f of wanted) {
    const was = byName.get(f.name);
    if (was === undefined) plan.add.push(f);
    else if (was.port !== f.port) plan.move.push({ from: was, to: f });
    else if (Object.keys(filterDifferences(was, f)).length > 0) plan.change.push({ from: was, to: f });
  }
  const names = new Set(wanted.map((f) => f.name));
  for (const f of running) if (!names.has(f.name)) plan.remove.push(f);
  return plan;
}

/** A plan with nothing to do. */
export function unchanged(plan: FilterPlan): boolean {
  return plan.add.length + plan.remove.length + plan.move.length + plan.change.length === 0;
}

/** New threads started, waiting for the rest of the reload: `finish` applies the plan, `undo` stops them. */
export interface StartedFilters {
  undo(): Promise<void>;
  /** Changes settings in place, stops the filters that went, starts those that wait for a port; what changed, one line a filter. */
  finish(): Promise<string[]>;
}

/**
 * Checks what planFilters could not (partners are customers; the ports of new filters free),
 * then starts the new filters whose ports are free now. Throws (ConfigError or ListenError)
 * with nothing changed.
 */
export async function startFilters(plan: FilterPlan, config: Config, store: Store, lookups: LookupServer): Promise<StartedFilters> {
  const starting = [...plan.add, ...plan.move.map((m) => m.to)];
  const planned = lookups.plannedFilters;
  if (plan.next.length > planned) {
    throw new ConfigError(
      `${plan.next.length} filters asked, but the memory budget was planned at start for ${planned} (each filter's thread, heaps and held bytes are part of --memory-budget: docs/memory.md): ` +
        `restart ivtd to run more (its least budget rises with the filters), or remove some`,
    );
  }
  await checkPartners([...starting, ...plan.change.filter((c) => c.from.partner !== c.to.partner).map((c) => c.to)], config, store);
  // The threads of the filters running now, found before any new one shares a name with them.
  const indexOf = (name: string): number => {
    const i = lookups.filterIndex(name);
    if (i === undefined) throw new Error(`filter ${name} is in the config but has no thread (a bug: please report it)`);
    return i;
  };
  const changes = plan.change.map((c) => ({ ...c, index: indexOf(c.to.name) }));
  const leaving = [...plan.remove, ...plan.move.map((m) => m.from)].map((f) => ({ f, index: indexOf(f.name), port: lookups.filterPorts[f.name] ?? f.port }));
  // A port a leaving filter holds is free only once it stopped: those starts wait.
  const freedLater = new Set(leaving.map((l) => l.port));
  const now = starting.filter((f) => f.port === 0 || !freedLater.has(f.port));
  const later = starting.filter((f) => !now.includes(f));
  for (const f of now) if (f.port !== 0) await portFree(config.host, f.port, f.name);
  const started: Array<{ f: FilterSettings; index: number; port: number }> = [];
  const undo = async () => {
    await Promise.all(started.splice(0).map((s) => lookups.retireFilter(s.index, s.f.timeoutMs)));
  };
  try {
    for (const f of now) started.push({ f, ...(await lookups.addFilter(f)) });
  } catch (e) {
    await undo();
    throw e;
  }
  return {
    undo,
    async finish() {
      const lines: string[] = [];
      for (const c of changes) {
        const d = filterDifferences(c.from, c.to);
        const acked = await lookups.updateFilter(c.index, c.to);
        log.info({ filter: c.to.name, before: pick(d, 0), after: pick(d, 1), ...(acked ? {} : { note: 'its thread did not confirm within 2 s (failing or being replaced: its replacement starts with these settings)' }) }, 'filter changed');
        lines.push(described(c.to.name, d));
      }
      await Promise.all(leaving.map((l) => lookups.retireFilter(l.index, l.f.timeoutMs)));
      for (const l of leaving) {
        if (!plan.remove.includes(l.f)) continue;
        log.info({ filter: l.f.name, port: l.port }, 'filter removed: its port is closed; the requests under way are answered, then its thread ends');
        lines.push(`filter ${l.f.name}: removed`);
      }
      for (const f of later) {
        try {
          // Just closed by a thread of this process: free within moments. Should it not be,
          // the thread is started regardless and retried as a failed one is, until it is.
          await portFree(config.host, f.port, f.name, 2000).catch(() => undefined);
          started.push({ f, ...(await lookups.addFilter(f, true)) });
        } catch (e) {
          log.error({ filter: f.name, port: f.port, err: (e as Error).message }, 'filter not listening: its port is still taken after the filter that held it stopped; retried as a failed thread is');
          lines.push(`filter ${f.name}: not listening yet on port ${f.port} (${(e as Error).message}); retried`);
        }
      }
      for (const s of started) {
        const moved = plan.move.find((m) => m.to === s.f);
        const settings = { host: config.host, port: s.port, upstream: s.f.upstream, partner: s.f.partner, mode: s.f.mode, nobid: s.f.nobid, timeoutMs: s.f.timeoutMs, maxSockets: s.f.maxSockets };
        if (moved) {
          const d = filterDifferences(moved.from, moved.to);
          log.info({ filter: s.f.name, before: pick(d, 0), after: pick(d, 1), port: s.port }, 'filter changed');
          lines.push(described(s.f.name, d));
        } else {
          log.info({ filter: s.f.name, ...settings }, 'filter added');
          lines.push(`filter ${s.f.name}: added on port ${s.port}`);
        }
      }
      return lines;
    },
  };
}

/** `filter pbs: mode monitor → block, timeoutMs 300 → 150`. */
function described(name: string, d: ReturnType<typeof filterDifferences>): string {
  return `filter ${name}: ${Object.entries(d).map(([k, [a, b]]) => `${k} ${a} → ${b}`).join(', ')}`;
}

function pick(d: ReturnType<typeof filterDifferences>, side: 0 | 1): Record<string, string | number> {
  const out: Record<string, string | number> = {};
  for (const [k, v] of Object.entries(d)) out[k] = v[side];
  return out;
}

/**
 * Resolves when host:port can be bound (exclusively: a listener that shares its port, as
 * uWebSockets.js's do, counts as taken); else throws naming the filter. `waitMs`: tries again
 * until then.
 */
async function portFree(host: string, port: number, name: string, waitMs = 0): Promise<void> {
  const deadline = Date.now() + waitMs;
  for (;;) {
    const problem = await new Promise<string | null>((resolve) => {
      const srv = createServer();
      srv.once('error', (e: NodeJS.ErrnoException) => resolve(e.code === 'EADDRINUSE' ? 'in use (another program, or another of ivtd\'s listeners)' : e.message));
      srv.listen({ host, port, exclusive: true }, () => srv.close(() => resolve(null)));
    });
    if (problem === null) return;
    if (Date.now() >= deadline) throw new ConfigError(`filter ${name}: port ${port} on ${host} is ${problem}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}
