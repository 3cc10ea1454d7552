// The house rules of src/ (docs/architecture.md, "Which way the imports run"): every import,
// `import type` included, runs down the floors below or stays in its folder; no two files
// import each other, directly or round a circle; no loose file at src/'s root; and no two
// files share a base name unless they are the same kind of thing in parallel units.
import t from 'tap';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { basename, dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');

/**
 * The floors, top first. A folder imports only from its own floor's folder or a lower floor;
 * folders on one floor do not import each other. A subfolder belongs to its top folder
 * (src/prebid/ortb/ is the lookup's).
 */
export const FLOORS: ReadonlyArray<readonly string[]> = [
  ['cli'],
  ['server'],
  ['account', 'ops', 'provisioning', 'dashboard'],
  ['fleet'],
  ['reporting', 'data'],
  ['openapi'],
  ['prebid'],
  ['policy'],
  ['signals', 'counts'],
  ['store'],
  ['http', 'runtime'],
  ['base'],
  ['memory'],
];

/** Base names more than one file of src/ may have: the same kind of thing in parallel units. */
const SHARED_NAMES: Record<string, string> = {
  'api.ts': "each unit's HTTP routes, assembled (account/, reporting/)",
  'main.ts': 'the entry point of a program (cli/: the ivtd command; dashboard/ui/: the browser app)',
  'params.ts': "a request's parameters checked against the spec (prebid/: a lookup's; reporting/: a report's)",
  'service.ts': "a unit's main-thread service that the start wires (policy/, reporting/)",
};

function sourceFiles(dir: string, out: string[] = []): string[] {
  for (const name of readdirSync(join(ROOT, dir))) {
    const path = join(dir, name);
    if (statSync(join(ROOT, path)).isDirectory()) sourceFiles(path, out);
    else if (name.endsWith('.ts') && !name.endsWith('.d.ts')) out.push(path);
  }
  return out;
}

interface Edge {
  from: string;
  to: string;
}

/** Every relative import of a file (static, type-only, re-export, import()), as repo paths. */
function importsOf(file: string): string[] {
  const src = ts.createSourceFile(file, readFileSync(join(ROOT, file), 'utf8'), ts.ScriptTarget.ES2022, true);
  const out: string[] = [];
  const add = (spec: string) => {
    if (spec.startsWith('.')) out.push(relative(ROOT, resolve(ROOT, dirname(file), spec)));
  };
  const visit = (node: ts.Node): void => {
    if ((ts.isImportDeclaration(node) || ts.isExportDeclaration(node)) && node.moduleSpecifier && ts.isStringLiteral(node.moduleSpecifier)) {
      add(node.moduleSpecifier.text);
    } else if (ts.isCallExpression(node) && node.expression.kind === ts.SyntaxKind.ImportKeyword) {
      const arg = node.arguments[0];
      if (arg && ts.isStringLiteral(arg)) add(arg.text);
    } else if (ts.isImportTypeNode(node) && ts.isLiteralTypeNode(node.argument) && ts.isStringLiteral(node.argument.literal)) {
      add(node.argument.literal.text);
    }
    ts.forEachChild(node, visit);
  };
  visit(src);
  return out;
}

const FILES = sourceFiles('src');
const EDGES: Edge[] = FILES.flatMap((from) => importsOf(from).filter((to) => to.startsWith('src/')).map((to) => ({ from, to })));

/** src/<folder>/… → folder; a file at src/'s root → ''. */
function folderOf(file: string): string {
  const parts = file.split('/');
  return parts.length > 2 ? parts[1]! : '';
}

function floorOf(folder: string): number {
  return FLOORS.findIndex((floor) => floor.includes(folder));
}

/** Strongly connected groups of more than one file (Tarjan): each is an import circle. */
export function circles(files: readonly string[], edges: readonly Edge[]): string[][] {
  const next = new Map<string, string[]>(files.map((f) => [f, []]));
  for (const e of edges) next.get(e.from)?.push(e.to);
  let counter = 0;
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const out: string[][] = [];
  const visit = (v: string): void => {
    index.set(v, counter);
    low.set(v, counter);
    counter++;
    stack.push(v);
    onStack.add(v);
    for (const w of next.get(v) ?? []) {
      if (!next.has(w)) continue;
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (onStack.has(w)) {
        low.set(v, Math.min(low.get(v)!, index.get(w)!));
      }
    }
    if (low.get(v) === index.get(v)) {
      const group: string[] = [];
      let w: string;
      do {
        w = stack.pop()!;
        onStack.delete(w);
        group.push(w);
      } while (w !== v);
      if (group.length > 1) out.push(group.sort());
    }
  };
  for (const f of files) if (!index.has(f)) visit(f);
  return out;
}

t.test('the circle finder finds a circle and nothing else', async (t) => {
  const files = ['a', 'b', 'c', 'd'];
  t.same(circles(files, [{ from: 'a', to: 'b' }, { from: 'b', to: 'c' }, { from: 'c', to: 'a' }, { from: 'c', to: 'd' }]), [['a', 'b', 'c']]);
  t.same(circles(files, [{ from: 'a', to: 'b' }, { from: 'b', to: 'c' }, { from: 'c', to: 'd' }]), []);
});

t.test('no file at the root of src/: each lives in the folder of its kind', async (t) => {
  t.same(FILES.filter((f) => folderOf(f) === ''), []);
});

t.test('every folder of src/ has a floor', async (t) => {
  const folders = [...new Set(FILES.map(folderOf))].sort();
  t.same(folders.filter((f) => floorOf(f) < 0), [], 'a new folder: give it its floor in FLOORS and in docs/architecture.md');
  t.ok(EDGES.length > 500, `the imports were read (${EDGES.length})`);
});

t.test('no import circle anywhere in src/', async (t) => {
  t.same(circles(FILES, EDGES), []);
});

t.test('every import runs down a floor or stays in its folder', async (t) => {
  const up: string[] = [];
  for (const e of EDGES) {
    const a = folderOf(e.from);
    const b = folderOf(e.to);
    if (a === b) continue;
    if (!(floorOf(a) < floorOf(b))) up.push(`${e.from} → ${e.to} (${a || 'src/'} on floor ${floorOf(a)}, ${b || 'src/'} on floor ${floorOf(b)})`);
  }
  t.same(up, []);
});

t.test('one name, one thing: no two files of src/ share a base name, but for parallel units', async (t) => {
  const byName = new Map<string, string[]>();
  for (const f of FILES) byName.set(basename(f), [...(byName.get(basename(f)) ?? []), f]);
  const repeated = [...byName].filter(([name, files]) => files.length > 1 && !(name in SHARED_NAMES)).map(([, files]) => files.join(', '));
  t.same(repeated, []);
  for (const name of Object.keys(SHARED_NAMES)) t.ok((byName.get(name)?.length ?? 0) > 1, `${name} is still shared (else drop it from SHARED_NAMES)`);
});

t.test('one FieldError', async (t) => {
  const classes = FILES.filter((f) => /\bclass FieldError\b/.test(readFileSync(join(ROOT, f), 'utf8')));
  t.same(classes, ['src/base/errors.ts']);
});
