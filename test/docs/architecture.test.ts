// The house's shape, checked (docs/architecture.md): imports run one way, routes → http → core →
// db, with the adapters (activators, metrics, config) beside core and seen by it only through the
// interfaces it owns; no file imports itself back through a circle; no source file over 400 lines.
// Inside core/, the wings (its first folders) import one another one way: no circle of wings, and
// the arrows between them are the ones docs/architecture.md lists. The SDK (sdk/src/) has no
// circle either.
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const SRC = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..', 'src');
const SDK = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..', 'sdk', 'src');

function sourceFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((f) => {
    const p = join(dir, f);
    if (statSync(p).isDirectory()) return sourceFiles(p);
    return p.endsWith('.ts') ? [p] : [];
  });
}

/**
 * Every relative import of a file (static, re-exports and dynamic), as paths relative to `root`
 * (the SDK names its TypeScript files by their `.js` output).
 */
function importsOf(file: string, root = SRC): string[] {
  const text = readFileSync(file, 'utf8');
  const specs = [
    ...text.matchAll(/(?:^|\n)\s*(?:import|export)\s[^'"]*?from\s+['"](\.{1,2}\/[^'"]+)['"]/g),
    ...text.matchAll(/import\(\s*['"](\.{1,2}\/[^'"]+)['"]\s*\)/g),
  ].map((m) => m[1]!);
  return specs.map((s) => relative(root, resolve(dirname(file), s.replace(/\.js$/, '.ts'))));
}

const files = sourceFiles(SRC);
const graph = new Map(files.map((f) => [relative(SRC, f), importsOf(f)]));
const sdkGraph = new Map(sourceFiles(SDK).map((f) => [relative(SDK, f), importsOf(f, SDK)]));

/** The wing of a file of core/ (`core/jobs/worker.ts` → `jobs`); null outside core/ or at its root. */
function wingOf(path: string): string | null {
  const parts = path.split('/');
  return parts[0] === 'core' && parts.length > 2 ? parts[1]! : null;
}

/** The wings of core/ and which wings each imports (the edges between two files of two wings). */
const wingGraph = new Map<string, string[]>();
for (const [from, tos] of graph) {
  const a = wingOf(from);
  if (a === null) continue;
  const edges = wingGraph.get(a) ?? [];
  for (const b of tos.map(wingOf)) if (b !== null && b !== a && !edges.includes(b)) edges.push(b);
  wingGraph.set(a, edges);
}

/** Tarjan's strongly connected components: every one with more than one node is a circle. */
function circlesOf(g: Map<string, string[]>): string[][] {
  let next = 0;
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const circles: string[][] = [];
  const visit = (v: string) => {
    index.set(v, next);
    low.set(v, next++);
    stack.push(v);
    for (const w of g.get(v) ?? []) {
      if (!g.has(w)) continue;
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (stack.includes(w)) low.set(v, Math.min(low.get(v)!, index.get(w)!));
    }
    if (low.get(v) !== index.get(v)) return;
    const component: string[] = [];
    let w: string;
    do {
      w = stack.pop()!;
      component.push(w);
    } while (w !== v);
    if (component.length > 1) circles.push(component.sort());
  };
  for (const v of g.keys()) if (!index.has(v)) visit(v);
  return circles;
}

/**
 * The floor of a file: a file may import its own floor or lower ones, never a higher one.
 * Entry points and development tools are the top; adapters stand between core and http so that
 * core cannot import them (it owns their interfaces: core/activator.ts, core/context.ts).
 */
function floor(path: string): number {
  const top = path.split('/')[0]!;
  if (['cli.ts', 'server.ts', 'cli', 'start', 'dev'].includes(top)) return 6;
  // The chat bot is a front door on core, as the routes are (docs/architecture.md#house-rules).
  if (top === 'routes' || top === 'bot') return 5;
  if (['http', 'openapi', 'console'].includes(top)) return 4;
  if (['activators', 'metrics', 'config.ts'].includes(top)) return 3;
  if (top === 'core') return 2;
  if (['db', 'logger.ts', 'logged-path.ts'].includes(top)) return 1;
  throw new Error(`${path}: no floor for this folder; give it one in test/docs/architecture.test.ts`);
}

describe('the import graph', () => {
  it('has no import that runs against the layering', () => {
    const against = [...graph].flatMap(([from, tos]) =>
      tos.filter((to) => floor(to) > floor(from)).map((to) => `${from} -> ${to}`),
    );
    expect(against).toEqual([]);
  });

  it('has no circle', () => {
    expect(circlesOf(graph)).toEqual([]);
  });

  it('has no circle of wings inside core/ (a wing imports another, never back)', () => {
    // What two wings both need is a leaf at core's root (vocabulary.ts, cursor.ts, hash.ts,
    // money.ts), or is handed in by the process (jobs/runner.ts).
    expect(wingGraph.size).toBeGreaterThan(8);
    const back = circlesOf(wingGraph).map((wings) =>
      wings.map((a) => {
        const ties = [...graph]
          .filter(([from]) => wingOf(from) === a)
          .flatMap(([from, tos]) =>
            tos
              .filter((to) => wings.includes(wingOf(to) ?? '') && wingOf(to) !== a)
              .map((to) => `${from} -> ${to}`),
          );
        return `${a}: ${ties.join(', ')}`;
      }),
    );
    expect(back).toEqual([]);
  });

  it("has the wings' arrows docs/architecture.md lists, no more and no fewer", () => {
    const page = readFileSync(join(SRC, '..', 'docs', 'architecture.md'), 'utf8');
    const section = page.slice(page.indexOf("## The wings' arrows"));
    const block = /```\n([\s\S]*?)```/.exec(section)?.[1] ?? '';
    const listed: Record<string, string[]> = {};
    for (const line of block.split('\n')) {
      const m = /^\s*([\w-]+)\/\s*(?:→\s*([^(]*))?/.exec(line);
      if (!m) continue;
      listed[m[1]!] = (m[2] ?? '')
        .split(',')
        .map((w) => w.trim())
        .filter(Boolean)
        .sort();
    }
    const imported = Object.fromEntries(
      [...wingGraph]
        .map(([wing, tos]) => [wing, [...tos].sort()] as const)
        .sort(([a], [b]) => a.localeCompare(b)),
    );
    expect(Object.keys(listed).length).toBeGreaterThan(8);
    expect(listed).toEqual(imported);
  });

  it('has no circle in the SDK, and imports only files that exist there', () => {
    expect(sdkGraph.size).toBeGreaterThan(5);
    expect(circlesOf(sdkGraph)).toEqual([]);
    const missing = [...sdkGraph].flatMap(([from, tos]) =>
      tos.filter((to) => !sdkGraph.has(to)).map((to) => `${from} -> ${to}`),
    );
    expect(missing).toEqual([]);
  });

  it('imports only files that exist', () => {
    const missing = [...graph].flatMap(([from, tos]) =>
      tos.filter((to) => !graph.has(to)).map((to) => `${from} -> ${to}`),
    );
    expect(missing).toEqual([]);
  });
});

describe('where SQL lives (docs/architecture.md, "Where SQL lives")', () => {
  // Above core/, a statement is a call into core: the wing that owns the table runs it. The files
  // named here are the exceptions, each with its reason; a new one fails this test.
  const ALLOWED: Record<string, string> = {
    'activators/sandbox.ts': 'the sandbox adapter reads its own table (sandbox_redemptions)',
    'routes/health.ts': 'a probe of the database itself (select 1)',
    'cli/backup.ts': 'a probe of a restored copy',
  };

  it('runs no statement above core/ but in the files named', () => {
    const found = [...graph.keys()].filter((f) => {
      const top = f.split('/')[0]!;
      if (top === 'core' || top === 'db') return false;
      return /\.query(<[^>]*>)?\(/.test(readFileSync(join(SRC, f), 'utf8'));
    });
    expect(found.filter((f) => !(f in ALLOWED))).toEqual([]);
    // A mended exception leaves the list.
    expect(Object.keys(ALLOWED).filter((f) => !found.includes(f))).toEqual([]);
  });

  it('opens no transaction above core/ (no .transaction( call, no BEGIN sent by hand)', () => {
    // A change and what records it (an update acted on, an audit row) commit together because
    // one core call opens their transaction: core/bot/updates.ts actOnUpdateOnce for the bot,
    // core/demo/seed.ts for the demo. Above core, a handler hands core what to do in it.
    const OPENS = /\.transaction(<[^>]*>)?\(|['"`]\s*(?:begin|start\s+transaction)\b/i;
    const found = [...graph.keys()].filter((f) => {
      const top = f.split('/')[0]!;
      if (top === 'core' || top === 'db') return false;
      return OPENS.test(readFileSync(join(SRC, f), 'utf8'));
    });
    expect(found).toEqual([]);
    // The rule reads what it should: the seam itself sends BEGIN and core opens transactions.
    expect(OPENS.test(readFileSync(join(SRC, 'db/database.ts'), 'utf8'))).toBe(true);
    expect(OPENS.test(readFileSync(join(SRC, 'core/bot/updates.ts'), 'utf8'))).toBe(true);
  });
});

describe('who writes job_codes (docs/architecture.md, "Wings of core")', () => {
  // A job's code rows live in core/jobs/: every write to job_codes from TypeScript is a function
  // of core/jobs/codes.ts (markSending, backToPending, rekey, forgetCodes, …) that the other wings
  // call inside their own transaction. The SQL functions (db/functions/*.sql) are not .ts files.
  const WRITE = /\b(?:insert\s+into|update|delete\s+from)\s+job_codes\b/i;

  it('writes job_codes from no .ts file outside core/jobs/', () => {
    const writers = [...graph.keys()].filter((f) => WRITE.test(readFileSync(join(SRC, f), 'utf8')));
    expect(writers.filter((f) => !f.startsWith('core/jobs/'))).toEqual([]);
    // The rule reads what it should: the one home of those writes is found by it.
    expect(writers).toContain('core/jobs/codes.ts');
  });
});

describe('the bot\'s shape (docs/bot.md, "Where it lives")', () => {
  it('imports a feature (bot/commands/) only from bot/index.ts, which registers them', () => {
    const up = [...graph]
      .filter(
        ([from]) => from.startsWith('bot/') && !from.startsWith('bot/commands/') && from !== 'bot/index.ts',
      )
      .flatMap(([from, tos]) =>
        tos.filter((to) => to.startsWith('bot/commands/')).map((to) => `${from} -> ${to}`),
      );
    expect(up).toEqual([]);
  });

  it('has no catch-all for buttons in a feature: the one fallback is bot/fallbacks.ts, registered last', () => {
    const CATCH_ALL = /\.on\(\s*['"]callback_query(?::data)?['"]/;
    const features = [...graph.keys()].filter((f) => f.startsWith('bot/commands/'));
    expect(features.length).toBeGreaterThan(5);
    expect(features.filter((f) => CATCH_ALL.test(readFileSync(join(SRC, f), 'utf8')))).toEqual([]);
    expect(CATCH_ALL.test(readFileSync(join(SRC, 'bot/fallbacks.ts'), 'utf8'))).toBe(true);
  });
});

describe('file sizes', () => {
  it('no TypeScript file under src/ is over 400 lines (split it: docs/architecture.md#house-rules)', () => {
    const long = files
      .map((f) => ({ file: relative(SRC, f), lines: readFileSync(f, 'utf8').split('\n').length }))
      .filter((f) => f.lines > 400);
    expect(long).toEqual([]);
  });
});
