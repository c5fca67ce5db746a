import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { PROJECT_ROOT } from '../lib/paths';
import { sdkTypes } from '../sdk/generate';

/** `npm run sdk:types`: regenerates sdk/schema.d.ts from the OpenAPI document. */
async function main() {
  const path = join(PROJECT_ROOT, 'sdk', 'schema.d.ts');
  writeFileSync(path, await sdkTypes());
  console.log(`wrote ${path}`);
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
