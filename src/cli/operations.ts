// The provisioning operations, in one table used by both paths: the CLI running them on a
// store it opened itself, and the control socket running them inside a live server.
// Arguments arrive as parsed JSON from the socket, so each operation checks their types.
import { rotateKey } from '../store/api-keys.ts';
import { createCustomer, listCustomers } from '../store/customers.ts';
import type { Store } from '../store/db.ts';
import { StoreError } from '../store/store-error.ts';
import { addUser, setPassword, setUserDisabled } from '../store/users.ts';
import { OPTIONS } from '../config.ts';
import { isWholeNumberIn } from '../whole-number.ts';

/**
 * What a running server refreshes after an operation: the lookup threads hold the live
 * pre-bid keys in memory. User changes need no hook: sessions are checked against the
 * store on every request, so a disabled user or a new password ends them at once.
 */
export interface OperationHooks {
  keysChanged(): void;
}

export const NO_HOOKS: OperationHooks = { keysChanged() {} };

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
