// Rewrites test-vectors/webhook-signatures.json from buildTestVectors() (npm run vectors -w packages/contract).
import { writeFileSync } from 'node:fs';
import { buildTestVectors } from '../src/test-vectors.ts';

const file = new URL('../test-vectors/webhook-signatures.json', import.meta.url);
writeFileSync(file, `${JSON.stringify(buildTestVectors(), null, 2)}\n`);
console.log(`wrote ${file.pathname}`);
