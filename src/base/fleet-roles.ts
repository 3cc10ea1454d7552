// The roles a host plays in a fleet (--role): `all` is the single host of today plus
// publication to ClickHouse; `edge` serves lookups only and takes its keys from ClickHouse.
export const ROLES = ['all', 'edge'] as const;
export type Role = (typeof ROLES)[number];
