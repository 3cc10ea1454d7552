// CSV of a table as RFC 4180 text: fields quoted when needed, quotes doubled, CRLF line
// ends. Dimension values come from bid requests (anyone's input), so a text value that a
// spreadsheet would run as a formula (+ - = @ first) gets a leading apostrophe (OWASP).
// Shared by the dashboard's downloads (src/dashboard/ui/) and policy export (src/policy/policy-csv.ts).

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
