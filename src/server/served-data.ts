// Start step "load data": read the data files and build the main thread's copy (a bad file
// stops the start), and last of all push them to the lookup threads (which turns
// /health-check to 200). A reload is the same steps, all or nothing: the old data keeps
// serving unless every thread took the new.
import type { Config } from '../base/config.ts';
import { describeBundle, loadBundle } from '../data/bundle.ts';
import type { DataBundle } from '../prebid/thread-bundle.ts';
import { log } from '../base/log.ts';
import { buildLookupData, type LookupData } from '../prebid/lookup-data.ts';
import type { LookupServer } from './lookup-threads.ts';
import type { HttpGetOptions } from '../data/http-get.ts';
import { refresherFor, type DataRefresher } from '../data/refresh.ts';
import { SourcesError } from '../data/sources.ts';
import type { Cleanup } from './cleanup.ts';

/** Reads the files and builds the lookup structures (verified); throws on a bad file. */
function read(config: Config, generation: number): { bundle: DataBundle; data: LookupData; warnings: string[] } {
  const bundle = loadBundle(config);
  const built = buildLookupData(bundle, generation, { verify: true });
  bundle.sellersIndex = built.data.sellers.index;
  return { bundle, data: built.data, warnings: [...bundle.warnings, ...built.warnings] };
}

function logWarnings(warnings: string[]): void {
  for (const w of warnings) log.warn({ warning: w }, 'data warning');
}

/** The data the server serves: its files, the main thread's copy, and its load number. */
export class ServedData {
  private constructor(
    public bundle: DataBundle,
    public data: LookupData,
    /** Each load of the data files is numbered; the shared IP verdict cache keys on it. */
    public generation: number,
  ) {}

  /** The start's load (generation 1). */
  static load(config: Config): ServedData {
    const { bundle, data, warnings } = read(config, 1);
    for (const f of describeBundle(bundle)) log.info(f, 'data file loaded');
    logWarnings(warnings);
    return new ServedData(bundle, data, 1);
  }

  /** The start's last step: every thread takes the data (and answers 200 from then on). */
  async pushTo(lookups: LookupServer): Promise<void> {
    const failures = await lookups.reload(this.bundle, this.generation);
    if (failures.length) throw new Error(`lookup threads could not load the data: ${failures.join('; ')}`);
  }

  /** The reload running, if any: reloads run one at a time. */
  private reloading: Promise<unknown> = Promise.resolve();

  /**
   * Re-reads the files (with `config`'s paths); on any failure the old data keeps serving.
   * A refresh, `ivtd data update` and SIGHUP may each ask at the same moment: side by side two
   * reloads took the same load number, and the threads' answers to one were taken for the
   * other's. So each waits for the one before it, then reads the files as they are then.
   */
  reload(config: Config, lookups: LookupServer): Promise<{ ok: boolean; errors: string[] }> {
    const next = this.reloading.then(() => this.reloadNow(config, lookups));
    this.reloading = next.catch(() => undefined);
    return next;
  }

  private async reloadNow(config: Config, lookups: LookupServer): Promise<{ ok: boolean; errors: string[] }> {
    const generation = this.generation + 1;
    let next: ReturnType<typeof read>;
    try {
      next = read(config, generation);
      logWarnings(next.warnings);
    } catch (e) {
      const msg = (e as Error).message;
      log.error({ err: msg }, 'reload refused: keeping the data already loaded');
      return { ok: false, errors: [msg] };
    }
    const failures = await lookups.reload(next.bundle, generation);
    if (failures.length) {
      for (const f of failures) log.error({ err: f }, 'reload failed on a lookup thread');
      return { ok: false, errors: failures };
    }
    this.generation = generation;
    this.bundle = next.bundle;
    this.data = next.data;
    for (const f of describeBundle(next.bundle)) log.info(f, 'data file reloaded');
    return { ok: true, errors: [] };
  }
}

/**
 * The data refresher: built whenever the sources file is usable (for `data.reload` and
 * /metrics); it fetches on its own only with --data-refresh (`startRefresher`). A broken
 * sources file stops the start when a refresh was asked for, and is only logged otherwise.
 */
export function openRefresher(config: Config, onChanged: () => Promise<unknown>, connect?: HttpGetOptions['connect']): DataRefresher | null {
  try {
    return refresherFor(config, { onChanged, log, ...(connect ? { connect } : {}) });
  } catch (e) {
    if (!(e instanceof SourcesError) || config.dataRefresh > 0) throw e;
    log.warn({ err: e.message }, 'sources file unusable: no data refresh status until it is fixed');
    return null;
  }
}

/** Starts the refresher's timers under --data-refresh; stopped (its requests aborted) by `cleanup` before the listeners and the store close. */
export function startRefresher(config: Config, refresher: DataRefresher | null, cleanup: Cleanup): void {
  if (!refresher) return;
  cleanup.add(() => refresher.stop());
  if (config.dataRefresh > 0) {
    refresher.start(config.dataRefresh * 1000);
    log.info({ every: config.dataRefresh, sources: config.dataSources ?? 'data dir sources.json' }, 'data refresh on');
  }
}
