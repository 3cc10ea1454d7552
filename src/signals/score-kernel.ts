// The score's inner part, generated from the table of reasons (reasons.ts) once at module
// load: one straight-line `if` per request signal and one inlined saturating term per
// history term, with the weights as literals. A loop over the rows costs a megamorphic call
// per row (about 2.7 × the score's time, measured); the generated code costs what the
// hand-written `if` chain it replaced did. Only names from the typed table enter the code,
// each checked to be an identifier, and the reason codes as JSON string literals.
import { HISTORY_FACT_FUNCTIONS, type HistoryRow, type SignalRow } from './reasons.ts';
import type { ScoreInputs } from './score-inputs.ts';

/**
 * Fills `out` with [p_hard, p_givt, p_sivt, p_hist], pushes the code of every signal that
 * fired (and every history term of at least the reason minimum) onto `reasons` in row
 * order, and returns the leading code: the largest contribution, the first on a tie ('' when none).
 */
export type ScoreKernel = (i: ScoreInputs, reasons: string[], out: Float64Array) => string;

const IDENT = /^[A-Za-z_][A-Za-z0-9_]*$/;

function ident(name: string): string {
  if (!IDENT.test(name)) throw new Error(`table of reasons: ${JSON.stringify(name)} is not an identifier`);
  return name;
}

function num(x: number): string {
  if (!Number.isFinite(x)) throw new Error(`table of reasons: ${x} is not a finite number`);
  return String(x);
}

/** The generated source (exported for the test that reads it). */
export function scoreKernelSource(signals: readonly SignalRow[], history: readonly HistoryRow[], histReasonMin: number): string {
  const q = { hard: 'qHard', givt: 'qGivt', sivt: 'qSivt' } as const;
  const lines: string[] = ['let qHard = 1, qGivt = 1, qSivt = 1, qHist = 1, lead = "", leadW = 0, e = 0, p = 0;'];
  for (const r of signals) {
    const test = r.when.map((t) => (t.startsWith('!') ? `!i.${ident(t.slice(1))}` : `i.${ident(t)}`)).join(' && ');
    const code = JSON.stringify(r.code);
    lines.push(`if (${test}) { ${q[r.component]} *= 1 - ${num(r.weight)}; reasons.push(${code}); if (${num(r.weight)} > leadW) { leadW = ${num(r.weight)}; lead = ${code}; } }`);
  }
  lines.push('const h = i.history;');
  for (const r of history) {
    const fact = r.fact in HISTORY_FACT_FUNCTIONS ? `F.${ident(r.fact)}(h)` : `h.${ident(r.fact)}`;
    const t = r.term;
    const sat = `(e > 0 ? (${num(t.weight)} * e) / (e + ${num(t.half)}) : 0)`;
    const code = JSON.stringify(r.code);
    lines.push(`e = ${fact} - ${num(t.floor)}; p = ${r.share === undefined ? sat : `h.${ident(r.share)} * ${sat}`};`);
    lines.push(`if (p >= ${num(histReasonMin)}) { reasons.push(${code}); if (p > leadW) { leadW = p; lead = ${code}; } } qHist *= 1 - p;`);
  }
  lines.push('out[0] = 1 - qHard; out[1] = 1 - qGivt; out[2] = 1 - qSivt; out[3] = 1 - qHist;', 'return lead;');
  return lines.join('\n');
}

export function compileScoreKernel(signals: readonly SignalRow[], history: readonly HistoryRow[], histReasonMin: number): ScoreKernel {
  const body = scoreKernelSource(signals, history, histReasonMin);
  // eslint-disable-next-line @typescript-eslint/no-implied-eval -- generated from the typed table above, see the file comment
  const make = new Function('F', `"use strict"; return function scoreKernel(i, reasons, out) {\n${body}\n};`) as (f: typeof HISTORY_FACT_FUNCTIONS) => ScoreKernel;
  return make(HISTORY_FACT_FUNCTIONS);
}
