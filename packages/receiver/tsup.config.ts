import { defineConfig } from 'tsup';

// Two entries, each bundled on its own (no code splitting): the `fetch` entry must not pull in a
// chunk that imports `node:crypto`, so it runs on edge runtimes that only have WebCrypto.
// @payhooks/contract is a private workspace package: what the receiver uses from it is bundled in,
// so the published package has no runtime dependencies.
export default defineConfig({
  entry: { index: 'src/index.ts', fetch: 'src/fetch.ts' },
  format: ['esm', 'cjs'],
  platform: 'node',
  removeNodeProtocol: false,
  target: 'es2022',
  // The contract's types are inlined too: the package has no exports map for .d.ts, so point the
  // declaration build at its source.
  dts: {
    resolve: ['@payhooks/contract'],
    compilerOptions: { baseUrl: '.', paths: { '@payhooks/contract': ['../contract/src/index.ts'] } },
  },
  noExternal: ['@payhooks/contract'],
  splitting: false,
  sourcemap: true,
  clean: true,
  treeshake: false,
  outDir: 'dist',
});
