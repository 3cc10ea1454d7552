// What a policy is made of: entry kinds, actions, an entry, a policy, and the (kind, value)
// key that makes an entry unique. The store keeps policies in this shape and the lookup
// threads compile it, so it sits below both; what an entry may be (the validation) is
// src/policy/model.ts.

/** What an entry matches, each against one request value (docs/policy.md). */
export const ENTRY_KINDS = ['ip', 'ua', 'ua_substring', 'app', 'domain', 'publisher', 'seller', 'ssai'] as const;
export type EntryKind = (typeof ENTRY_KINDS)[number];
export const ACTIONS = ['allow', 'deny'] as const;
export type Action = (typeof ACTIONS)[number];

export interface PolicyEntry {
  kind: EntryKind;
  value: string;
  action: Action;
}

export interface Policy {
  /** Score at which the band becomes `medium`; null = the model's default. */
  medium: number | null;
  /** Score at which the band becomes `high`; null = the model's default. */
  high: number | null;
  entries: PolicyEntry[];
}

export function entryKey(e: { kind: EntryKind; value: string }): string {
  return `${e.kind}\u0000${e.value}`;
}
