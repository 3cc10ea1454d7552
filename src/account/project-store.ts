// Scanning projects in the store. Every query is scoped by customer_id: another
// customer's project is indistinguishable from a missing one.
import { randomUUID } from 'node:crypto';
import { isoTime, type Queryable } from '../store/db.ts';
import { isUuid } from '../base/uuid.ts';
import type { ProjectFields } from './project-fields.ts';

export interface Project extends ProjectFields {
  project_id: string;
  created_at: string;
  updated_at: string;
}

/** The canonical (lowercase) form of a project id, or undefined when it cannot be one. */
export function projectId(raw: string): string | undefined {
  return isUuid(raw) ? raw.toLowerCase() : undefined;
}

const COLUMNS =
  'project_id, name, demand_id, tag, scan_now, times_per_day, alert_pixel, locations, creative_id, created_at, updated_at';

function toProject(r: Record<string, unknown>): Project {
  const locations = r.locations as string;
  return {
    project_id: r.project_id as string,
    name: r.name as string,
    demand_id: r.demand_id as string,
    tag: r.tag as string,
    scan_now: r.scan_now === 1 ? 1 : 0,
    times_per_day: r.times_per_day as number,
    alert_pixel: (r.alert_pixel as string | null) ?? null,
    locations: locations === '' ? [] : locations.split(','),
    creative_id: (r.creative_id as string | null) ?? null,
    created_at: isoTime(r.created_at),
    updated_at: isoTime(r.updated_at),
  };
}

// Column values in store form: locations as one comma-joined string.
function columns(f: Partial<ProjectFields>): Record<string, string | number | null> {
  const out: Record<string, string | number | null> = {};
  for (const [k, v] of Object.entries(f)) out[k] = k === 'locations' ? (v as string[]).join(',') : (v as string | number | null);
  return out;
}

export async function createProject(q: Queryable, customerId: string, f: ProjectFields): Promise<Project> {
  const rows = await q.all(
    `INSERT INTO projects (project_id, customer_id, name, demand_id, tag, scan_now, times_per_day, alert_pixel, locations, creative_id, created_at, updated_at)
     VALUES ($project_id, $customer_id, $name, $demand_id, $tag, $scan_now, $times_per_day, $alert_pixel, $locations, $creative_id,
             epoch_ms($now::BIGINT), epoch_ms($now::BIGINT))
     RETURNING ${COLUMNS}`,
    { ...columns(f), project_id: randomUUID(), customer_id: customerId, now: Date.now() },
  );
  return toProject(rows[0]!);
}

export async function getProject(q: Queryable, customerId: string, id: string): Promise<Project | undefined> {
  const r = await q.one(`SELECT ${COLUMNS} FROM projects WHERE project_id = $id AND customer_id = $cid`, { id, cid: customerId });
  return r ? toProject(r) : undefined;
}

/** A page of the customer's projects, newest first, and how many there are in all. */
export async function listProjects(
  q: Queryable,
  customerId: string,
  page: { limit: number; offset: number },
): Promise<{ projects: Project[]; total: number }> {
  const rows = await q.all(
    `SELECT ${COLUMNS} FROM projects WHERE customer_id = $cid ORDER BY seq DESC LIMIT $limit OFFSET $offset`,
    { cid: customerId, limit: page.limit, offset: page.offset },
  );
  const count = await q.one<{ n: bigint }>('SELECT count(*) AS n FROM projects WHERE customer_id = $cid', { cid: customerId });
  return { projects: rows.map(toProject), total: Number(count?.n ?? 0) };
}

export async function updateProject(q: Queryable, customerId: string, id: string, f: Partial<ProjectFields>): Promise<Project | undefined> {
  const values = columns(f);
  // Column names come from the validated field set, never from the request as such.
  const set = Object.keys(values).map((k) => `${k} = $${k}`);
  const rows = await q.all(
    `UPDATE projects SET ${set.join(', ')}, updated_at = epoch_ms($now::BIGINT)
     WHERE project_id = $id AND customer_id = $cid RETURNING ${COLUMNS}`,
    { ...values, id, cid: customerId, now: Date.now() },
  );
  return rows[0] ? toProject(rows[0]) : undefined;
}

export async function deleteProject(q: Queryable, customerId: string, id: string): Promise<boolean> {
  const rows = await q.all('DELETE FROM projects WHERE project_id = $id AND customer_id = $cid RETURNING project_id', { id, cid: customerId });
  return rows.length > 0;
}
