// What every page gets from the shell, and what it gives back.
import type { Account, Api, DashboardConfig } from './api-client.ts';

export interface PageContext {
  api: Api;
  /** The signed-in account (cached; `reload` fetches it again, e.g. after a key rotation). */
  account(reload?: boolean): Promise<Account>;
  config(): Promise<DashboardConfig>;
}

export interface Page {
  el: HTMLElement;
  dispose?(): void;
}
