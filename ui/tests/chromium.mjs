// What the tests of the UI's rules against conformance/ vectors share
// (display.test.mjs, time.test.mjs, money.test.mjs): a headless Chromium
// launched as every UI test launches it (pages.mjs launches the same), one
// browser a test file, a page holding the built code (tests/dist/mock.js,
// which exposes the rules on `window`), and the vectors.

import { readFileSync } from 'node:fs'
import { join, dirname } from 'node:path'
import { fileURLToPath } from 'node:url'
import { before, after } from 'node:test'
import { chromium } from 'playwright-core'

const here = dirname(fileURLToPath(import.meta.url))

/** A vector file of conformance/, parsed. */
export function vectors(file) {
  return JSON.parse(readFileSync(join(here, '..', '..', 'conformance', file), 'utf8'))
}

/** Debian's chromium (or $CHROMIUM), headless. */
export function launch() {
  return chromium.launch({
    executablePath: process.env.CHROMIUM ?? '/usr/bin/chromium',
    args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  })
}

/** A page with the built rules loaded, in a browser context of its own (`options`, e.g. a time zone). */
export async function rulesPage(browser, title, options = {}) {
  const context = await browser.newContext(options)
  const page = await context.newPage()
  await page.setContent(`<!doctype html><title>${title}</title>`)
  await page.addScriptTag({ path: join(here, 'dist', 'mock.js') })
  return page
}

/**
 * One browser for the test file, launched before its tests and closed after
 * them, and (with `title`) one rules page in it: read `.browser` and
 * `.page` inside the tests.
 */
export function rulesBrowser(title) {
  const held = { browser: undefined, page: undefined }
  before(async () => {
    held.browser = await launch()
    if (title) held.page = await rulesPage(held.browser, title)
  })
  after(async () => {
    await held.browser?.close()
  })
  return held
}
