// A policy's entries as CSV (the dashboard's and the CLI's import and export): a header
// `kind,action,value`, then one entry per line, RFC 4180 quoting. Export neutralises values
// a spreadsheet would run as formulas with a leading apostrophe (as every CSV of ivtd
// does); import removes that apostrophe again, so export → import gives the same list.
import { csvField } from '../base/csv-text.ts';
import { parseEntry, PolicyError, type PolicyEntry } from './model.ts';

export const CSV_COLUMNS = ['kind', 'action', 'value'] as const;

export function policyToCsv(entries: readonly PolicyEntry[]): string {
  const lines = [CSV_COLUMNS.join(',')];
  for (const e of entries) lines.push(`${e.kind},${e.action},${csvField(e.value)}`);
  return lines.join('\r\n') + '\r\n';
}

/** RFC 4180 records with the line each starts on. */
function records(text: string): Array<{ line: number; cells: string[] }> {
  const out: Array<{ line: number; cells: string[] }> = [];
  let i = text.charCodeAt(0) === 0xfeff ? 1 : 0;
  let line = 1;
  while (i < text.length) {
    const start = line;
    const cells: string[] = [];
    for (;;) {
      let cell = '';
      if (text[i] === '"') {
        i++;
        for (;;) {
          if (i >= text.length) throw new PolicyError(`line ${start}`, `line ${start}: a quoted field is not closed.`);
          const c = text[i]!;
          if (c === '"') {
            if (text[i + 1] === '"') { cell += '"'; i += 2; continue; }
            i++;
            break;
          }
          if (c === '\n') line++;
          cell += c;
          i++;
        }
      } else {
        while (i < text.length && text[i] !== ',' && text[i] !== '\n' && text[i] !== '\r') cell += text[i++];
      }
      cells.push(cell);
      if (text[i] === ',') { i++; continue; }
      if (text[i] === '\r') i++;
      if (text[i] === '\n') { i++; line++; }
      else if (i < text.length) throw new PolicyError(`line ${start}`, `line ${start}: unexpected text after a quoted field.`);
      break;
    }
    if (!(cells.length === 1 && cells[0] === '')) out.push({ line: start, cells });
  }
  return out;
}

const NEUTRALISED = /^'[+\-=@\t\r]/;

/** The entries of a CSV file; PolicyError names the line (and the column) of the first problem. */
export function parsePolicyCsv(text: string): PolicyEntry[] {
  const rows = records(text);
  const header = rows.shift();
  const cols = header?.cells.map((c) => c.trim().toLowerCase()) ?? [];
  const at = CSV_COLUMNS.map((c) => cols.indexOf(c));
  if (header === undefined || at.some((i) => i < 0) || cols.length !== CSV_COLUMNS.length) {
    throw new PolicyError('line 1', `line 1 must be the header "${CSV_COLUMNS.join(',')}" (columns in any order).`);
  }
  return rows.map((r) => {
    if (r.cells.length !== CSV_COLUMNS.length) throw new PolicyError(`line ${r.line}`, `line ${r.line} has ${r.cells.length} fields; expected ${CSV_COLUMNS.length} (${CSV_COLUMNS.join(',')}).`);
    let value = r.cells[at[2]!]!;
    if (NEUTRALISED.test(value)) value = value.slice(1);
    return parseEntry({ kind: r.cells[at[0]!]!.trim(), action: r.cells[at[1]!]!.trim(), value }, `line ${r.line}`);
  });
}
