// Functions short enough to follow by name (issue 57): none of the lookup thread's code
// (src/prebid/) over 120 lines, no dashboard page function (src/dashboard/ui/pages/) over
// 200, and the ads.txt index built in named steps. A function's length is its lines from its
// first to its last, nested functions included (runLookupWorker measured 489 so), read with
// TypeScript's parser: declarations, expressions, arrows, methods, accessors, constructors.
import t from 'tap';
import { readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');

interface Measured {
  file: string;
  name: string;
  line: number;
  lines: number;
}

// The project's TypeScript files, as tsconfig.json lists them: the AssemblyScript sources
// of wasm/ folders (compiled by asc, excluded from tsc) are not measured.
const PROJECT_FILES = (() => {
  const { config } = ts.readConfigFile(join(ROOT, 'tsconfig.json'), ts.sys.readFile) as { config: unknown };
  return ts.parseJsonConfigFileContent(config, ts.sys, ROOT).fileNames.map((f) => relative(ROOT, f)).sort();
})();

/** The project's .ts files under `dir` (repo-relative), its subfolders included. */
function tsFiles(dir: string): string[] {
  return PROJECT_FILES.filter((f) => f.startsWith(`${dir}/`) && f.endsWith('.ts') && !f.endsWith('.d.ts'));
}

/** A readable name for a function node: its own, or the variable, property or method it is assigned to. */
function nameOf(node: ts.FunctionLikeDeclaration): string {
  if (node.name !== undefined) return node.name.getText();
  if (ts.isConstructorDeclaration(node)) return 'constructor';
  const p = node.parent;
  if ((ts.isVariableDeclaration(p) || ts.isPropertyAssignment(p) || ts.isPropertyDeclaration(p)) && p.name !== undefined) return p.name.getText();
  if (ts.isCallExpression(p)) return `(argument of ${p.expression.getText().split('\n')[0]!.slice(-40)})`;
  return '(anonymous)';
}

/** Every function of `file` with its length in lines. */
function measure(file: string, text = readFileSync(join(ROOT, file), 'utf8')): Measured[] {
  const src = ts.createSourceFile(file, text, ts.ScriptTarget.ES2022, true, ts.ScriptKind.TS);
  const out: Measured[] = [];
  const visit = (node: ts.Node): void => {
    if (ts.isFunctionLike(node) && 'body' in node && node.body !== undefined) {
      const f = node as ts.FunctionLikeDeclaration;
      const first = src.getLineAndCharacterOfPosition(f.getStart(src)).line;
      const last = src.getLineAndCharacterOfPosition(f.getEnd()).line;
      out.push({ file, name: nameOf(f), line: first + 1, lines: last - first + 1 });
    }
    ts.forEachChild(node, visit);
  };
  visit(src);
  return out;
}

function over(measured: Measured[], max: number): string[] {
  return measured.filter((m) => m.lines > max).map((m) => `${m.file}:${m.line} ${m.name} is ${m.lines} lines`);
}

function longerThan(files: string[], max: number): string[] {
  return over(files.flatMap((f) => measure(f)), max);
}

t.test('the measure counts a function from its first line to its last, nested ones included', async (t) => {
  const text = [
    'export function outer(a: number): number {', // 1
    '  const inner = (b: number) => {', //            2
    '    return b + 1;', //                           3
    '  };', //                                        4
    '  return inner(a);', //                          5
    '}', //                                           6
    'class C {', //                                   7
    '  m(): void {}', //                              8
    '  get g(): number {', //                         9
    '    return 1;', //                               10
    '  }', //                                         11
    '}', //                                           12
    'const o = { f: function () {', //                13
    '  return 2;', //                                 14
    '} };', //                                        15
    'declare function bodiless(): void;', //          16 (no body: not a function to measure)
  ].join('\n');
  const got = measure('x.ts', text).map((m) => `${m.name}@${m.line}:${m.lines}`);
  t.same(got, ['outer@1:6', 'inner@2:3', 'm@8:1', 'g@9:3', 'f@13:3']);
});

t.test('a function one line over the limit is reported, one at it is not', async (t) => {
  const fn = (name: string, lines: number) => [`function ${name}() {`, ...Array.from({ length: lines - 2 }, (_, i) => `  const v${i} = ${i};`), '}'].join('\n');
  const text = [fn('atLimit', 120), fn('overLimit', 121)].join('\n');
  t.same(over(measure('x.ts', text), 120), ['x.ts:121 overLimit is 121 lines']);
});

t.test('the lookup thread (src/prebid/) has no function over 120 lines', async (t) => {
  const files = tsFiles('src/prebid');
  t.ok(files.includes('src/prebid/worker.ts') && files.includes('src/prebid/pipeline.ts'), 'the files are found');
  t.ok(measure('src/prebid/worker.ts').some((m) => m.name === 'runLookupWorker'), 'runLookupWorker is measured');
  t.same(longerThan(files, 120), []);
});

t.test('no dashboard page function (src/dashboard/ui/pages/) is over 200 lines', async (t) => {
  const files = tsFiles('src/dashboard/ui/pages');
  t.ok(files.includes('src/dashboard/ui/pages/analytics.ts'), 'the files are found');
  t.same(longerThan(files, 200), []);
});

t.test('the ads.txt index is built in named steps (buildAdsTxtIndex at most 120 lines)', async (t) => {
  const m = measure('src/signals/ads-txt-build.ts').find((x) => x.name === 'buildAdsTxtIndex');
  t.ok(m, 'buildAdsTxtIndex is found');
  t.ok(m!.lines <= 120, `buildAdsTxtIndex is ${m!.lines} lines`);
});
