// Builds the dashboard into dist/web (served by `flotilla up` at `/`, see src/server/web.ts).
import { defineConfig } from 'vite';
import react from '@vitejs/plugin-react';
import { fileURLToPath } from 'node:url';

export default defineConfig({
  root: fileURLToPath(new URL('.', import.meta.url)),
  plugins: [react()],
  build: {
    outDir: fileURLToPath(new URL('../dist/web', import.meta.url)),
    emptyOutDir: true,
    target: 'es2022',
    chunkSizeWarningLimit: 1000,
    rollupOptions: {
      // zod's sources carry /*@__PURE__*/ comments in places Rollup ignores; harmless noise.
      onwarn(warning, warn) {
        if (warning.code === 'INVALID_ANNOTATION') return;
        warn(warning);
      },
    },
  },
  server: { proxy: { '/api': 'http://127.0.0.1:8787' } },
});
