import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { SERVICE_ROOT } from './processes';

/**
 * Reads a V8 `.cpuprofile` (from `node --cpu-prof`) and says where the time went, in the two
 * views that point at a fix: self time by package or source file (who burns the CPU), and
 * inclusive time by our own source files (which of our steps pays for it, callees included).
 */

type Node = { id: number; callFrame: { functionName: string; url: string; lineNumber: number }; children?: number[] };
type Profile = { nodes: Node[]; samples: number[]; timeDeltas: number[] };

export type Share = { name: string; ms: number; percent: number };
export type ProfileSummary = { busyMs: number; selfByArea: Share[]; selfByFunction: Share[]; inclusiveByOurFile: Share[] };

const SPECIAL = new Set(['(garbage collector)', '(program)', '(idle)', '(root)']);

function area(node: Node): string {
  const { url, functionName } = node.callFrame;
  if (SPECIAL.has(functionName)) return functionName;
  if (!url) return `(native) ${functionName || 'anonymous'}`;
  const pkg = /node_modules\/((?:@[^/]+\/)?[^/]+)\//.exec(url);
  if (pkg) return pkg[1];
  if (url.startsWith('node:')) return `node:${url.slice(5).split('/').slice(0, 2).join('/')}`;
  return ourFile(url) ?? url;
}

/** `dist/lib/http/middleware.js` → `lib/http/middleware` (of the checkout the services ran from); null for anything not ours. */
function ourFile(url: string): string | null {
  const path = url.replace(/^file:\/\//, '');
  const rel = relative(join(SERVICE_ROOT, 'dist'), path);
  return rel.startsWith('..') || rel.startsWith('/') ? null : rel.replace(/\.js$/, '');
}

const top = (totals: Map<string, number>, busy: number, n: number): Share[] =>
  [...totals]
    .sort((a, b) => b[1] - a[1])
    .slice(0, n)
    .map(([name, us]) => ({ name, ms: us / 1000, percent: (100 * us) / busy }));

export function summarize(file: string, n = 12): ProfileSummary {
  const profile = JSON.parse(readFileSync(file, 'utf8')) as Profile;
  const byId = new Map(profile.nodes.map((node) => [node.id, node]));
  const parent = new Map<number, number>();
  for (const node of profile.nodes) for (const child of node.children ?? []) parent.set(child, node.id);

  const selfByArea = new Map<string, number>();
  const selfByFunction = new Map<string, number>();
  const inclusive = new Map<string, number>();
  let busy = 0;
  profile.samples.forEach((id, i) => {
    const us = profile.timeDeltas[i] ?? 0;
    const node = byId.get(id)!;
    if (node.callFrame.functionName === '(idle)') return;
    busy += us;
    const where = area(node);
    selfByArea.set(where, (selfByArea.get(where) ?? 0) + us);
    const fn = `${node.callFrame.functionName || 'anonymous'} (${where}:${node.callFrame.lineNumber + 1})`;
    selfByFunction.set(fn, (selfByFunction.get(fn) ?? 0) + us);
    const files = new Set<string>();
    for (let at: number | undefined = id; at !== undefined; at = parent.get(at)) {
      const mine = ourFile(byId.get(at)!.callFrame.url);
      if (mine) files.add(mine);
    }
    for (const f of files) inclusive.set(f, (inclusive.get(f) ?? 0) + us);
  });
  return {
    busyMs: busy / 1000,
    selfByArea: top(selfByArea, busy, n),
    selfByFunction: top(selfByFunction, busy, n),
    inclusiveByOurFile: top(inclusive, busy, n),
  };
}

/** `--cpu-prof` writes one file per thread, `CPU.<date>.<time>.<pid>.<thread>.<seq>.cpuprofile`; thread 0 is the main one. */
export const profilesByThread = (dir: string): { thread: number; file: string }[] =>
  readdirSync(dir)
    .map((f) => ({ f, m: /^CPU\.\d+\.\d+\.\d+\.(\d+)\.\d+\.cpuprofile$/.exec(f) }))
    .filter(({ m }) => m !== null)
    .map(({ f, m }) => ({ thread: Number(m![1]), file: join(dir, f) }))
    .sort((a, b) => a.thread - b.thread);
