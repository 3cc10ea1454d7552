// CSV of a table as RFC 4180 text: fields quoted when needed, quotes doubled, CRLF line
// ends. Dimension values come from bid requests (anyone's input), so a text value that a
// spreadsheet would run as a formula (+ - = @ first) gets a leading apostrophe (OWASP).

export type CsvCell = string | number | boolean | null | undefined;

const FORMULA_START = /^[+\-=@\t\r]/;
const PLAIN_NUMBER = /^-?\d+(\.\d+)?$/;

/** One field: formula-neutralised, then quoted when it holds a comma, a quote, CR/LF or edge spaces. */
export function csvField(v: CsvCell): string {
  if (v === null || v === undefined) return '';
  let s = String(v);
  if (typeof v === 'string' && FORMULA_START.test(s) && !PLAIN_NUMBER.test(s)) s = `'${s}`;
  if (/[",\r\n]/.test(s) || s !== s.trim()) return `"${s.replaceAll('"', '""')}"`;
  return s;
}

/** Header line then one line per row, columns in the given order, CRLF-terminated. */
export function toCsv(columns: readonly string[], rows: ReadonlyArray<Record<string, CsvCell>>): string {
  const lines = [columns.map(csvField).join(',')];
  for (const r of rows) lines.push(columns.map((c) => csvField(r[c])).join(','));
  return lines.join('\r\n') + '\r\n';
}

/** A file name that says what the table holds, e.g. ivtd-report_2024-05-01_2024-05-07_pub-geo_p2.csv. */
export function csvFileName(start: string, end: string, groupBy: readonly string[], page: number): string {
  const dims = groupBy.length ? groupBy.join('-') : 'total';
  return `ivtd-report_${start}_${end}_${dims}${page > 1 ? `_p${page}` : ''}.csv`;
}
