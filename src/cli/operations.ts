// The provisioning operations, in one table used by both paths: the CLI running them on a
// store it opened itself, and the control socket running them inside a live server.
// Arguments arrive as parsed JSON from the socket, so each operation checks their types.
import type { Store } from '../store/db.ts';
import {
  StoreError,
  addUser,
  createCustomer,
  listCustomers,
  rotateKey,
  setPassword,
  setUserDisabled,
} from '../store/customers.ts';
import { OPTIONS } from '../config.ts';

/** What a running server refreshes after an operation changed keys or users. */
export interface OperationHooks {
  keysChanged(): void;
  usersChanged(username: string): void;
  /** Reloads the data files (the SIGHUP path); only a running server can. */
  reloadData(): Promise<{ ok: boolean; errors: string[] }>;
}

export const NO_HOOKS: OperationHooks = {
  keysChanged() {},
  usersChanged() {},
  async reloadData() {
    throw new StoreError('invalid', 'no running server to reload');
  },
};

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
  if (typeof v !== 'number' || !Number.isSafeInteger(v) || v < 0 || v > max) {
    throw new StoreError('invalid', `grace must be a whole number of seconds from 0 to ${max}`);
  }
  return v;
}

async function setDisabled(store: Store, args: Args, disabled: boolean, hooks: OperationHooks) {
  const r = await setUserDisabled(store, { username: str(args, 'username'), disabled });
  hooks.usersChanged(r.username);
  return r;
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
  'user.passwd': async (store: Store, args: Args, hooks: OperationHooks) => {
    const r = await setPassword(store, { username: str(args, 'username'), password: str(args, 'password') });
    hooks.usersChanged(r.username);
    return r;
  },
  'user.disable': (store: Store, args: Args, hooks: OperationHooks) => setDisabled(store, args, true, hooks),
  'user.enable': (store: Store, args: Args, hooks: OperationHooks) => setDisabled(store, args, false, hooks),
  // Sent by `ivtd data update` after it changed files, so the server loads them now.
  'data.reload': (_store: Store, _args: Args, hooks: OperationHooks) => hooks.reloadData(),
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
