import { defineConfig, mergeConfig } from 'vitest/config';
import base from './vitest.config.ts';

// `npm run test:ha`: the reference HA deployment (deploy/ha) under failover. Not part of
// `npm test`: it needs Debian's patroni, etcd-server and haproxy, and a minute of its own.
export default mergeConfig(
  { ...base, test: { ...base.test, projects: undefined } },
  defineConfig({
    test: {
      include: ['packages/server/test/ha/**/*.test.ts'],
      env: { PAYHOOKS_TEST_DB: 'postgres' },
      testTimeout: 600_000,
      hookTimeout: 360_000,
    },
  }),
);
