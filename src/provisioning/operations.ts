// The provisioning operations, in one table used by both paths: the CLI running them on a
// store it opened itself, and the control socket running them inside a live server.
// Arguments arrive as parsed JSON from the socket, so each operation checks their types.
import { rotateKey } from '../store/api-keys.ts';
import { createCustomer, listCustomers } from '../store/customers.ts';
import type { Store } from '../store/db.ts';
import { StoreError } from '../store/store-error.ts';
import { addUser, setPassword, setUserDisabled } from '../store/users.ts';
import { OPTIONS } from '../base/config.ts';
import { requireCustomer } from '../store/customer-ref.ts';
import { addEntries, getPolicy, removeEntries, setPolicy } from '../policy/manage.ts';
import { PolicyError } from '../policy/model.ts';
import type { PolicyService } from '../policy/service.ts';
import { isWholeNumberIn } from '../base/whole-number.ts';

/**
 * What a running server refreshes after an operation: the lookup threads hold the live
 * pre-bid keys in memory. User changes need no hook: sessions are checked against the
 * store on every request, so a disabled user or a new password ends them at once.
 */
export interface OperationHooks {
  keysChanged(): void;
  /** Reloads the data files (the SIGHUP path); only a running server can. */
  reloadData(): Promise<{ ok: boolean; errors: string[] }>;
  /** `ivtd reload`: the config and the data files, as on SIGHUP; only a running server can. */
  reload?(): Promise<ReloadOutcome>;
  /** A running server's compiled policies: a change is checked against its budget share and pushed to the lookup threads. */
  policies?: PolicyService | null;
  /** `ivtd explain`: a lookup judged by the running server's engine (its data and keys); body: a BidRequest's JSON. */
  explain?(query: string, body: string | null): Promise<unknown>;
}

/** What a reload did: applied (with the options that changed live and those waiting for a restart), or refused and why. */
export interface ReloadOutcome {
  ok: boolean;
  errors: string[];
  changed: string[];
  restart: string[];
}

export const NO_HOOKS: OperationHooks = {
  keysChanged() {},
  async reloadData() {
    throw new StoreError('invalid', 'no running server to reload');
  },
};

/** A policy operation: on the customer REF names, PolicyError as the StoreError `invalid` (exit 2). */
async function onPolicy<T>(store: Store, args: Args, fn: (customerId: string) => Promise<T>): Promise<T & { customer_id: string }> {
  const c = await requireCustomer(store, str(args, 'customer'));
  try {
    return { customer_id: c.customer_id, ...(await fn(c.customer_id)) };
  } catch (e) {
    if (e instanceof PolicyError) throw new StoreError('invalid', e.message);
    throw e;
  }
}

type Args = Record<string, unknown>;

function str(args: Args, name: string): string {
  const v = args[name];
  if (typeof v !== 'string') throw new StoreError('invalid', `${name} must be a string`);
  return v;
}

function kind(args: Args): 'prebid' | 'reporting' {
  const v = args.kind;
  if (v !== 'prebid' && v !== 'reporting') throw new StoreError('invalid', 'kind must be "prebid" or "reporting"');
  return v;
}

function graceSeconds(args: Args): number {
  const v = args.graceSeconds;
  const max = OPTIONS.keyGrace.max;
  if (!isWholeNumberIn(v, 0, max)) {
    throw new StoreError('invalid', `grace must be a whole number of seconds from 0 to ${max}`);
  }
  return v;
}

function setDisabled(store: Store, args: Args, disabled: boolean) {
  return setUserDisabled(store, { username: str(args, 'username'), disabled });
}

export const OPERATIONS = {
  'customer.create': async (store: Store, args: Args, hooks: OperationHooks) => {
    const r = await createCustomer(store, {
      name: str(args, 'name'),
      username: str(args, 'username'),
      password: str(args, 'password'),
    });
    hooks.keysChanged();
    return r;
  },
  'customer.list': async (store: Store) => ({ customers: await listCustomers(store) }),
  'key.rotate': async (store: Store, args: Args, hooks: OperationHooks) => {
    const r = await rotateKey(store, { customer: str(args, 'customer'), kind: kind(args), graceSeconds: graceSeconds(args) });
    hooks.keysChanged();
    return r;
  },
  'user.add': async (store: Store, args: Args) =>
    addUser(store, { customer: str(args, 'customer'), username: str(args, 'username'), password: str(args, 'password') }),
  'user.passwd': async (store: Store, args: Args) =>
    setPassword(store, { username: str(args, 'username'), password: str(args, 'password') }),
  'user.disable': (store: Store, args: Args) => setDisabled(store, args, true),
  'user.enable': (store: Store, args: Args) => setDisabled(store, args, false),
  // Sent by `ivtd data update` after it changed files, so the server loads them now.
  'data.reload': (_store: Store, _args: Args, hooks: OperationHooks) => hooks.reloadData(),
  // `ivtd reload`: what SIGHUP does, with its outcome reported back.
  'server.reload': async (_store: Store, _args: Args, hooks: OperationHooks): Promise<ReloadOutcome> => {
    if (!hooks.reload) throw new StoreError('invalid', 'no running server to reload');
    return hooks.reload();
  },
  // `ivtd explain`: only a running server holds the loaded data, keys and history a lookup is judged by.
  'lookup.explain': async (_store: Store, args: Args, hooks: OperationHooks): Promise<unknown> => {
    if (!hooks.explain) throw new StoreError('invalid', 'no running server to explain with');
    const body = args.body;
    if (body !== null && typeof body !== 'string') throw new StoreError('invalid', 'body must be the BidRequest JSON as a string, or null');
    return hooks.explain(str(args, 'query'), body);
  },
  'policy.show': (store: Store, args: Args) => onPolicy(store, args, (id) => getPolicy(store, id)),
  'policy.set': (store: Store, args: Args, hooks: OperationHooks) =>
    onPolicy(store, args, (id) => setPolicy(store, hooks.policies ?? null, id, args.policy)),
  'policy.add': (store: Store, args: Args, hooks: OperationHooks) =>
    onPolicy(store, args, (id) => addEntries(store, hooks.policies ?? null, id, args.entries)),
  'policy.remove': (store: Store, args: Args, hooks: OperationHooks) =>
    onPolicy(store, args, (id) => removeEntries(store, hooks.policies ?? null, id, args.entries)),
  /** Entries replace the list (thresholds kept), or with replace false are added to it. */
  'policy.import': (store: Store, args: Args, hooks: OperationHooks) =>
    onPolicy(store, args, async (id) => {
      // A missing list is no list: with `replace` it would have emptied the policy.
      if (!Array.isArray(args.entries)) throw new PolicyError('entries', 'entries must be an array of {kind, value, action}.');
      if (args.replace !== true) return addEntries(store, hooks.policies ?? null, id, args.entries);
      const current = await getPolicy(store, id);
      const r = await setPolicy(store, hooks.policies ?? null, id, { medium: current.medium, high: current.high, entries: args.entries });
      return { added: r.entries, entries: r.entries };
    }),
} satisfies Record<string, (store: Store, args: Args, hooks: OperationHooks) => Promise<unknown>>;

export type OperationName = keyof typeof OPERATIONS;
export type OperationResult<N extends OperationName> = Awaited<ReturnType<(typeof OPERATIONS)[N]>>;

export function isOperationName(name: string): name is OperationName {
  return Object.hasOwn(OPERATIONS, name);
}

export function runOperation<N extends OperationName>(
  store: Store,
  name: N,
  args: Args,
  hooks: OperationHooks = NO_HOOKS,
): Promise<OperationResult<N>> {
  const op = OPERATIONS[name] as (store: Store, args: Args, hooks: OperationHooks) => Promise<OperationResult<N>>;
  return op(store, args, hooks);
}
