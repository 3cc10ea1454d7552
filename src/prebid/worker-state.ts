// A lookup thread's serving state (one thread runs one worker: src/prebid/worker.ts): the
// engine and beacon judge it serves with, and whether it may serve. Module-level variables,
// read by the routes and the framing as plain bindings (in the thread's bundle they are the
// bundle's own top-level variables, as the one closure's were); only the thread's lifecycle
// (worker.ts) changes them, through the setters below.
import type { ErrorAnswer } from '../base/errors.ts';
import type { LookupEngine } from './pipeline.ts';
import type { BeaconJudge } from './beacon.ts';

const DRAINING: ErrorAnswer = { status: 503, code: 'unavailable', message: 'This ivtd instance is shutting down; retry on another instance.' };
const LOADING: ErrorAnswer = { status: 503, code: 'unavailable', message: 'Lookup data is still loading; retry in a moment.' };
const NO_KEY_SET: ErrorAnswer = { status: 503, code: 'unavailable', message: 'This fleet edge has no key set yet: ClickHouse has not answered since it started (see its log), so it knows no API key. Retry on another host.' };

/** Null until the first data message: the port is open but lookups and health answer 503. */
export let engine: LookupEngine | null = null;
/** Made with the engine (it reads the engine's history and UA cache); null without init.beacon. */
export let beacon: BeaconJudge | null = null;
/** Stopping or failing: every answer closes its connection (see reply() in worker-framing.ts). */
export let draining = false;
/** False on a fleet edge until its first key set. */
export let keysKnown = true;

/** The engine made from the first data. */
export function serveWith(e: LookupEngine): void {
  engine = e;
}

/** The beacon judge made with the engine. */
export function setBeacon(b: BeaconJudge): void {
  beacon = b;
}

export function setKeysKnown(known: boolean): void {
  keysKnown = known;
}

export function startDraining(): void {
  draining = true;
}

/**
 * The 503 while this thread cannot serve lookups (draining, no data yet, or a fleet edge
 * without a key set), else null. `keys` false: what a beacon needs, which no API key checks.
 */
export function unavailable(keys = true): ErrorAnswer | null {
  return draining ? DRAINING : engine === null ? LOADING : keysKnown || !keys ? null : NO_KEY_SET;
}
