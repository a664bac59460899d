// Builds the IPC mock the UI tests inject before the page's own scripts
// (tests/mock.ts, over @tauri-apps/api/mocks) as one classic script.
import { defineConfig } from 'vite'

export default defineConfig({
  // A test bundle: no size table in the app's build output, only problems.
  logLevel: 'warn',
  build: {
    outDir: 'tests/dist',
    emptyOutDir: true,
    lib: {
      entry: 'tests/mock.ts',
      name: 'parleyMock',
      formats: ['iife'],
      fileName: () => 'mock.js',
    },
  },
})
