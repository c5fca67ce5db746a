// Prints the total of every tier `npm test` ran, as one plain closing line, and resets the tally.
const { existsSync, readFileSync, rmSync } = require('node:fs');
const { join } = require('node:path');

const file = join(__dirname, '..', '..', '.tmp', 'test-counts.jsonl');
if (process.argv[2] === '--reset') {
  rmSync(file, { force: true });
} else {
  const runs = existsSync(file)
    ? readFileSync(file, 'utf8')
        .trim()
        .split('\n')
        .filter(Boolean)
        .map((l) => JSON.parse(l))
    : [];
  const sum = (k) => runs.reduce((n, r) => n + r[k], 0);
  console.log(`\n${runs.map((r) => r.tier).join(' + ') || 'no tiers ran'}`);
  console.log(`total: ${sum('passes')} passed, ${sum('failures')} failed, ${sum('pending')} skipped`);
  rmSync(file, { force: true });
  if (runs.length === 0 || sum('failures') > 0) process.exit(1);
}
