import { defaultClientConditions, defaultServerConditions } from 'vite';
import { defineConfig } from 'vitest/config';

// Three kinds of run: pure unit tests, the server's integration suite on real PostgreSQL,
// and again on embedded PGlite every integration file that exercises storage (docs/architecture.md,
// Storage: one suite on both). The receiver SDK's tests use real PostgreSQL and Redis themselves.
const integration = ['packages/server/test/integration/**/*.test.ts'];
// Integration tests that never open a database: the PostgreSQL run is enough.
const noDatabase = ['**/broker-connections.test.ts'];
// Integration tests whose subject is above storage: they open a database because the service
// needs one, but what they check happens before a statement is sent or after its answer came
// back, through the same queries the rest of the suite runs on both databases. They run once,
// on PostgreSQL (docs/decisions/embedded-database-test-scope.md).
const aboveStorage = [
  // The API's documents and the types generated from them.
  '**/openapi-documents.test.ts',
  '**/openapi-client.test.ts',
  '**/portal-ui-types.test.ts',
  // Requests refused before any statement: parsing, content types, field rules.
  '**/http-input.test.ts',
  '**/validation.test.ts',
  // Where and how a request leaves: URL rules, forbidden targets, the proxy, deadlines, brokers.
  '**/url-rules.test.ts',
  '**/safe-targets.test.ts',
  '**/egress-proxy.test.ts',
  '**/sender-deadline.test.ts',
  '**/broker-destinations.test.ts',
  // Telemetry and log lines.
  '**/tracing.test.ts',
  '**/dev-logs.test.ts',
  // Pages in Chromium, documents' snippets and the deploy example.
  '**/checkout-browser.test.ts',
  '**/webhooks-doc.test.ts',
  '**/deploy-dashboard.test.ts',
  // CLI commands over the queries the in-process tests cover; the embedded database's own CLI
  // path (create, migrate, open, one process at a time, serve --dev) is cli.test.ts, on both.
  '**/admin-list.test.ts',
  '**/trigger.test.ts',
];

// The workspace packages' `@payhooks/source` export condition points at their TypeScript
// sources, so tests run what is in src/ (never a stale dist/). Spawned `payhooks` processes run
// the compiled CLI, which test/global-setup.ts brings up to date first.
const conditions = ['@payhooks/source'];

// Node has no "module" export condition, so tests resolve without it too: @opentelemetry/*'s
// "module" builds import files without extensions, which Node's ESM loader refuses.
const serverConditions = defaultServerConditions.filter((c) => c !== 'module');

export default defineConfig({
  resolve: { conditions: [...conditions, ...defaultClientConditions] },
  ssr: { resolve: { conditions: [...conditions, ...serverConditions] } },
  test: {
    globalSetup: ['packages/server/test/global-setup.ts'],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    maxWorkers: 3,
    projects: [
      {
        extends: true,
        test: { name: 'unit', include: ['packages/*/test/unit/**/*.test.ts'] },
      },
      {
        extends: true,
        // isolate: false: files run in one module registry per worker, so the server's modules
        // are imported once per worker, not once per file (about a quarter of the suite's time).
        // Every file starts its own service and database and restores what it changes
        // (process.env, the tracing singleton).
        test: { name: 'postgres', include: integration, env: { PAYHOOKS_TEST_DB: 'postgres' }, isolate: false },
      },
      {
        extends: true,
        // *.postgres.test.ts need several processes on one database: PostgreSQL only.
        test: {
          name: 'pglite',
          include: integration,
          exclude: ['**/*.postgres.test.ts', ...noDatabase, ...aboveStorage],
          env: { PAYHOOKS_TEST_DB: 'pglite' },
          isolate: false,
        },
      },
      {
        extends: true,
        // The three publishable packages packed, installed from their tarballs and run.
        test: { name: 'package', include: ['packages/server/test/package/**/*.test.ts'], testTimeout: 120_000, hookTimeout: 360_000 },
      },
      {
        extends: true,
        test: { name: 'receiver', include: ['packages/receiver/test/**/*.test.ts', 'examples/**/test/**/*.test.ts'] },
      },
      {
        extends: true,
        // The receiver libraries of other languages (sdks/<language>/) and every example receiver,
        // driven by one harness (sdks/test/harness.ts) against a real payhooks on PostgreSQL.
        test: {
          name: 'sdks',
          include: ['sdks/test/**/*.test.ts'],
          env: { PAYHOOKS_TEST_DB: 'postgres' },
          testTimeout: 120_000,
          hookTimeout: 180_000,
        },
      },
    ],
  },
});
