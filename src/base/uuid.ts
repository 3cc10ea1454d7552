// The one UUID rule (8-4-4-4-12 hex digits, either case): partner IDs, device IFAs,
// project IDs.
export const UUID_RE = /^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$/;

export function isUuid(s: string): boolean {
  return s.length === 36 && UUID_RE.test(s);
}
