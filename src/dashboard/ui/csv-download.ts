// The dashboard's CSV downloads: their file names (the CSV text itself: src/base/csv-text.ts).

/** A file name that says what the table holds, e.g. ivtd-report_2024-05-01_2024-05-07_pub-geo_p2.csv. */
export function csvFileName(start: string, end: string, groupBy: readonly string[], page: number): string {
  const dims = groupBy.length ? groupBy.join('-') : 'total';
  return `ivtd-report_${start}_${end}_${dims}${page > 1 ? `_p${page}` : ''}.csv`;
}
