import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';

// The tests `npm run test:mutation` (StrykerJS) runs against each mutant of the security-critical
// code (stryker.config.json): the unit tests of that code, nothing that needs a database, a server
// or a child process (a static mutant runs every test, so the list is kept to these).
// `@payhooks/contract` is aliased to this directory's copy of its source, because Stryker runs in
// a sandbox copy of the repository whose node_modules symlink still points at the unmutated
// original.
const contract = fileURLToPath(new URL('./packages/contract/src/index.ts', import.meta.url));

export default defineConfig({
  resolve: { alias: { '@payhooks/contract': contract } },
  test: {
    include: [
      'packages/contract/test/unit/**/*.test.ts',
      ...[
        'ip-ranges',
        'url-policy',
        'encryption',
        'api-keys',
        'schedule',
        'enabled-events',
        'payment-state-machine',
        'config',
        'attempt-slots',
      ].map((name) => `packages/server/test/unit/${name}.test.ts`),
      'packages/receiver/test/verify.test.ts',
      'packages/receiver/test/verify-inputs.test.ts',
      'packages/receiver/test/sharpening.test.ts',
    ],
    testTimeout: 30_000,
    maxWorkers: 1,
  },
});
