// What a lookup thread loads: the value imports (not `import type`, which leave nothing at
// run time) reachable from the thread's entry never include the store, the data loader and
// refresher, the ads.txt crawler, the bounded GET, ClickHouse or the fleet, config.ts, the
// logger or the main thread's start-up (src/server/).
// Everything that talks to the store, the network or the disk stays on the main thread
// (docs/architecture.md), and a thread does not load it either.
import t from 'tap';
import { readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { WORKER_ROLES } from '../../src/runtime/asset-table.ts';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');

/** Never reached from a lookup thread: a repo path (a folder when it ends in /) or a package. */
const FORBIDDEN: Array<{ what: string; why: string }> = [
  { what: 'src/store/', why: 'the store' },
  { what: '@duckdb/node-api', why: 'the store' },
  { what: 'src/data/bundle.ts', why: 'the data loader' },
  { what: 'src/data/refresh.ts', why: 'the data refresher' },
  { what: 'src/data/ads-txt-crawl.ts', why: 'the ads.txt crawler' },
  { what: 'src/data/http-get.ts', why: 'the bounded GET' },
  { what: 'src/fleet/', why: 'the fleet' },
  { what: '@clickhouse/client', why: 'ClickHouse' },
  { what: 'src/base/config.ts', why: 'the options' },
  { what: 'src/base/log.ts', why: 'the logger (a lookup thread never logs; its figures go to the main thread)' },
  { what: 'src/server/', why: "the main thread's start-up and composers" },
];

interface Imports {
  /** Repo-relative files and bare package names this file loads at run time. */
  values: string[];
  /** The same for `import type` / `export type` (erased: they load nothing). */
  types: string[];
}

/** The imports of one file, read with TypeScript's parser (static, re-exports and import()). */
function importsOf(file: string): Imports {
  const src = ts.createSourceFile(file, readFileSync(join(ROOT, file), 'utf8'), ts.ScriptTarget.ES2022, true);
  const out: Imports = { values: [], types: [] };
  const add = (spec: string, typeOnly: boolean) => {
    const target = spec.startsWith('.') ? relative(ROOT, resolve(ROOT, dirname(file), spec)) : spec;
    (typeOnly ? out.types : out.values).push(target);
  };
  const visit = (node: ts.Node): void => {
    if (ts.isImportDeclaration(node) && ts.isStringLiteral(node.moduleSpecifier)) {
      // `import { type A }` keeps an `import {}` under verbatimModuleSyntax: it loads the module.
      add(node.moduleSpecifier.text, node.importClause?.isTypeOnly === true);
    } else if (ts.isExportDeclaration(node) && node.moduleSpecifier && ts.isStringLiteral(node.moduleSpecifier)) {
      add(node.moduleSpecifier.text, node.isTypeOnly);
    } else if (ts.isCallExpression(node) && node.expression.kind === ts.SyntaxKind.ImportKeyword) {
      const arg = node.arguments[0];
      if (arg && ts.isStringLiteral(arg)) add(arg.text, false);
    }
    ts.forEachChild(node, visit);
  };
  visit(src);
  return out;
}

/** Every file and package reachable by value imports, each with the file that first imports it. */
function reachable(entries: string[]): Map<string, string | null> {
  const from = new Map<string, string | null>(entries.map((e) => [e, null]));
  const queue = [...entries];
  while (queue.length > 0) {
    const file = queue.shift()!;
    for (const dep of importsOf(file).values) {
      if (from.has(dep)) continue;
      from.set(dep, file);
      if (dep.startsWith('src/')) queue.push(dep);
    }
  }
  return from;
}

function chain(from: Map<string, string | null>, target: string): string {
  const path = [target];
  for (let at = from.get(target); at; at = from.get(at)) path.unshift(at);
  return path.join(' → ');
}

// The lookup role's entry, and the binary's top level that runs it in a thread.
const ENTRIES = [WORKER_ROLES.lookup, 'src/runtime/bundle-entry.ts'];

t.test('the import reader tells value imports from type imports', async (t) => {
  const messages = importsOf('src/prebid/messages.ts');
  t.ok(messages.types.includes('src/policy/service.ts'), 'prebid/messages.ts names PolicyUpdate as a type only');
  t.notOk(messages.values.includes('src/policy/service.ts'));
  const worker = importsOf('src/prebid/worker.ts');
  t.ok(worker.values.includes('src/prebid/pipeline.ts'));
  t.ok(worker.values.includes('uWebSockets.js'), 'packages are kept by name');
});

t.test("a lookup thread's value imports stay on the lookup path", async (t) => {
  const from = reachable(ENTRIES);
  t.ok(from.has('src/prebid/pipeline.ts') && from.has('src/signals/score.ts'), 'the walk reaches the lookup itself');
  for (const { what, why } of FORBIDDEN) {
    const hits = [...from.keys()].filter((m) => (what.endsWith('/') ? m.startsWith(what) : m === what));
    t.same(hits.map((m) => chain(from, m)), [], `not in a lookup thread: ${why} (${what})`);
  }
});
