// The IVT categories, as a list with no other import: the table of reasons (reasons.ts) gives
// each reason its category, and category.ts derives its views from that table, so the list
// sits beneath both.

/** The categories, in a fixed order (reporting values; the dashboard shows them in it). */
export const CATEGORIES = [
  'declared_crawler',
  /** AI agents and AI crawlers (data/ai-agents.txt). */
  'ai_agent',
  /** Uptime monitors and synthetic checks from their published probe addresses (src/signals/bot-services.ts). */
  'monitoring',
  'automation',
  'data_center',
  'non_routable_ip',
  'malformed_ua',
  'known_bad_device',
  'activity',
  'anonymizing_proxy',
  'device_spoofing',
  'supply_chain',
  'geo_mismatch',
  /** The customer's own deny list (src/policy). */
  'denylisted',
  'none',
] as const;
export type Category = (typeof CATEGORIES)[number];
