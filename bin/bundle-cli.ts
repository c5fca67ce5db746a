import { buildSync } from 'esbuild';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';

/**
 * The second step of `npm run build`: `dist/bin/mps.js`, what `npx mps` runs, made by esbuild as one
 * file from bin/mps.ts (tsconfig.build.json leaves that entry point to this step; tsc still checks
 * it, and compiles the modules it uses for the rest of dist/). A CLI pays for its start on every
 * command: as some forty modules (its own and commander's), each resolved and read, loading took
 * 35–45 ms here; as one file, 15–25 ms (docs/decisions.md, "the CLI in one file").
 *
 * Left out of the file, loaded from node_modules when first used: the MCP SDK and zod (only for
 * `mps mcp`), cli-progress (only on a terminal) and openapi-typescript (`sdk:types`).
 *
 * A file whose content would not change is not written: a build of a current tree writes nothing,
 * so `npm start` sees nothing to do (test/e2e/first-session.test.ts).
 */
const root = join(__dirname, '..', '..');
const outfile = join(root, 'dist', 'bin', 'mps.js');

const { outputFiles } = buildSync({
  entryPoints: [join(root, 'bin', 'mps.ts')],
  outfile,
  bundle: true,
  platform: 'node',
  format: 'cjs',
  target: 'node20',
  sourcemap: true,
  external: ['@modelcontextprotocol/sdk', 'zod', 'cli-progress', 'openapi-typescript'],
  logLevel: 'warning',
  write: false,
});

for (const file of outputFiles) {
  const current = readOrNull(file.path);
  if (current && Buffer.compare(current, file.contents) === 0) continue;
  mkdirSync(dirname(file.path), { recursive: true });
  writeFileSync(file.path, file.contents);
}

function readOrNull(path: string): Buffer | null {
  try {
    return readFileSync(path);
  } catch {
    return null;
  }
}
