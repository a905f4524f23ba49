import { defineConfig } from 'vite';
import react from '@vitejs/plugin-react';

// Served by payhooks under /portal/. Scripts and styles are emitted as files (the portal's
// Content-Security-Policy allows no inline script or style).
export default defineConfig({
  base: '/portal/',
  plugins: [react()],
  build: { outDir: 'dist', emptyOutDir: true, assetsInlineLimit: 0, modulePreload: { polyfill: false } },
  server: { proxy: { '/portal/api': 'http://127.0.0.1:8080' } },
});
