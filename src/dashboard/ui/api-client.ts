// Typed calls to the account API (same origin) that the pages use.
import type { Session } from './session.ts';
import type { MetricRow } from './series.ts';

export type KeyKind = 'prebid' | 'reporting';

export interface AccountKey {
  kind: KeyKind;
  prefix: string;
  created_at: string;
  expires_at: string | null;
}

export interface Account {
  customer_id: string;
  partner_id: string;
  name: string;
  username: string;
  keys: AccountKey[];
}

export interface RotatedKey {
  kind: KeyKind;
  key: string;
  previous_expires_at: string | null;
}

export type ReportRow = MetricRow & Record<string, string | number>;

export interface Report {
  meta: { start_date: string; end_date: string; group_by: string[]; total_rows: number; returned_rows: number; offset: number };
  rows: ReportRow[];
}

/** GET /v1/report/impressions grouped by band and imp_status. */
export interface ImpressionReport {
  meta: Report['meta'];
  rows: Array<{ band?: string; imp_status?: string; impressions: number; valid_impressions: number; invalid_impressions: number }>;
}

/** GET /v1/report/calibration. */
export interface CalibrationReport {
  meta: { start_date: string; end_date: string };
  rows: Array<{
    band: string;
    labelled_lookups: number;
    invalid_lookups: number;
    invalid_share: number | null;
    by_feedback: { labelled: number; invalid: number };
    by_beacon: { labelled: number; invalid: number };
  }>;
}

export interface ReportQuery {
  start_date: string;
  end_date: string;
  group_by: string[];
  limit: number;
  offset: number;
  /** Filter name → comma-separated values; empty values are left out. */
  filters: Record<string, string>;
}

export interface ProjectInput {
  name: string;
  demand_id: string;
  tag: string;
  scan_now: 0 | 1;
  times_per_day: number;
  alert_pixel: string | null;
  /** Comma-separated ISO country codes as typed; null = no restriction. */
  locations: string | null;
  creative_id: string | null;
}

export interface Project extends Omit<ProjectInput, 'locations'> {
  /** ISO 3166-1 alpha-2 codes, uppercase; empty = no restriction. */
  locations: string[];
  project_id: string;
  created_at: string;
  updated_at: string;
}

export interface ProjectList {
  projects: Project[];
  total: number;
  limit: number;
  offset: number;
}

export type PolicyKind = 'ip' | 'ua' | 'ua_substring' | 'app' | 'domain' | 'publisher' | 'seller' | 'ssai';

export interface PolicyEntry {
  kind: PolicyKind;
  value: string;
  action: 'allow' | 'deny';
}

export interface PolicyView {
  medium: number | null;
  high: number | null;
  version: number;
  updated_at: string | null;
  total: number;
  matching: number;
  offset: number;
  entries: PolicyEntry[];
  limits: { max_entries: number; defaults: { medium: number; high: number }; thresholds: { medium: { min: number; max: number }; high: { min: number; max: number } } };
}

export interface DashboardConfig {
  prebid_url: string;
  reporting_url: string;
  api_url: string;
}

/** The query string of a report request, in a stable order (the same text the curl example shows). */
export function reportSearch(q: ReportQuery): string {
  const p = new URLSearchParams({ start_date: q.start_date, end_date: q.end_date });
  if (q.group_by.length) p.set('group_by', q.group_by.join(','));
  p.set('limit', String(q.limit));
  p.set('offset', String(q.offset));
  for (const [k, v] of Object.entries(q.filters)) {
    const values = v
      .split(',')
      .map((s) => s.trim())
      .filter(Boolean)
      .join(',');
    if (values) p.set(k, values);
  }
  // Commas separate values in this API; leaving them unescaped keeps the URL readable.
  return p.toString().replaceAll('%2C', ',');
}

export class Api {
  constructor(private readonly session: Session) {}

  account(): Promise<Account> {
    return this.session.request('GET', '/v1/account');
  }
  rotateKey(kind: KeyKind, graceSeconds: number): Promise<RotatedKey> {
    return this.session.request('POST', '/v1/account/keys/rotate', { kind, grace_seconds: graceSeconds });
  }
  report(q: ReportQuery): Promise<Report> {
    return this.session.request('GET', `/v1/report?${reportSearch(q)}`);
  }
  impressions(q: ReportQuery): Promise<ImpressionReport> {
    return this.session.request('GET', `/v1/report/impressions?${reportSearch(q)}`);
  }
  calibration(start: string, end: string): Promise<CalibrationReport> {
    return this.session.request('GET', `/v1/report/calibration?start_date=${start}&end_date=${end}`);
  }
  listProjects(limit: number, offset: number): Promise<ProjectList> {
    return this.session.request('GET', `/v1/project/list?limit=${limit}&offset=${offset}`);
  }
  createProject(p: ProjectInput): Promise<Project> {
    return this.session.request('POST', '/v1/project/create', p);
  }
  updateProject(id: string, p: Partial<ProjectInput>): Promise<Project> {
    return this.session.request('PATCH', `/v1/project/${encodeURIComponent(id)}`, p);
  }
  deleteProject(id: string): Promise<void> {
    return this.session.request('DELETE', `/v1/project/${encodeURIComponent(id)}`);
  }
  policy(q: { search?: string; kind?: string; limit?: number; offset?: number } = {}): Promise<PolicyView> {
    const p = new URLSearchParams();
    for (const [k, v] of Object.entries(q)) if (v !== undefined && v !== '') p.set(k, String(v));
    const s = p.toString();
    return this.session.request('GET', `/v1/policy${s ? `?${s}` : ''}`);
  }
  addPolicyEntries(entries: PolicyEntry[]): Promise<{ added: number; entries: number }> {
    return this.session.request('POST', '/v1/policy/entries', { entries });
  }
  removePolicyEntries(entries: Array<Pick<PolicyEntry, 'kind' | 'value'>>): Promise<{ removed: number; entries: number }> {
    return this.session.request('POST', '/v1/policy/entries/remove', { entries });
  }
  setThresholds(t: { medium: number | null; high: number | null }): Promise<{ medium: number | null; high: number | null }> {
    return this.session.request('PATCH', '/v1/policy', t);
  }
}

/** Served by the dashboard itself (no session needed): where this server's other ports are. */
export async function dashboardConfig(): Promise<DashboardConfig> {
  const res = await fetch('/dashboard-config.json', { cache: 'no-store' });
  if (!res.ok) throw new Error(`dashboard-config.json: ${res.status}`);
  return (await res.json()) as DashboardConfig;
}
