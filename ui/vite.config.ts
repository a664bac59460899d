// The app's pages: one HTML entry per window kind (see src-tauri/src/windows.rs).
import { defineConfig } from 'vite'

export default defineConfig({
  base: './',
  build: {
    outDir: 'dist',
    emptyOutDir: true,
    target: 'es2022',
    // No inline scripts or data: URLs: the CSP allows 'self' only.
    assetsInlineLimit: 0,
    modulePreload: { polyfill: false },
    rollupOptions: {
      input: {
        index: 'index.html',
        review: 'review.html',
        grant: 'grant.html',
        audit: 'audit.html',
        settings: 'settings.html',
      },
    },
  },
})
