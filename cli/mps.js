#!/usr/bin/env node
'use strict';
// `npx mps …` in this repository: runs the built CLI (dist/bin/mps.js, made by `npm run build`),
// else the TypeScript source through tsx, so it works right after `npm ci` too.
const { existsSync } = require('node:fs');
const { join } = require('node:path');
const { spawnSync } = require('node:child_process');

const root = join(__dirname, '..');
const built = join(root, 'dist', 'bin', 'mps.js');
if (existsSync(built)) {
  require(built);
} else {
  const run = spawnSync(process.execPath, ['--import', 'tsx', join(root, 'bin', 'mps.ts'), ...process.argv.slice(2)], {
    stdio: 'inherit',
    cwd: process.cwd(),
  });
  process.exit(run.status ?? 1);
}
