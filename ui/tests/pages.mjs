// What the UI's page tests share (ui.test.mjs, plain.test.mjs): the built
// ui/dist served over HTTP with the app's own CSP, a headless Chromium
// (Debian's, through playwright-core), and pages opened with the Tauri IPC
// mocked (tests/mock.ts over @tauri-apps/api/mocks) and fixtures given.

import { before, after } from 'node:test'
import http from 'node:http'
import { readFile } from 'node:fs/promises'
import { readFileSync } from 'node:fs'
import { join, extname, dirname } from 'node:path'
import { fileURLToPath } from 'node:url'
import { launch } from './chromium.mjs'

const here = dirname(fileURLToPath(import.meta.url))
const dist = join(here, '..', 'dist')
const mock = join(here, 'dist', 'mock.js')
const CSP = JSON.parse(readFileSync(join(here, '..', '..', 'src-tauri', 'tauri.conf.json'), 'utf8')).app.security.csp
const TYPES = { '.html': 'text/html; charset=utf-8', '.js': 'text/javascript', '.css': 'text/css' }

let server
let base
let browser

before(async () => {
  server = http.createServer(async (req, res) => {
    const path = decodeURIComponent(new URL(req.url, 'http://x').pathname)
    if (path.includes('..')) return void res.writeHead(400).end()
    if (path === '/favicon.ico') return void res.writeHead(204).end()
    try {
      const body = await readFile(join(dist, path === '/' ? 'index.html' : path))
      res.writeHead(200, { 'content-type': TYPES[extname(path)] ?? 'application/octet-stream', 'content-security-policy': CSP })
      res.end(body)
    } catch {
      res.writeHead(404).end()
    }
  })
  await new Promise((r) => server.listen(0, '127.0.0.1', r))
  base = `http://127.0.0.1:${server.address().port}`
  browser = await launch()
})

after(async () => {
  await browser?.close()
  server?.close()
})

/** Opens a page with fixtures; collects errors, CSP violations and dialogs. */
export async function open(file, fixtures, { label = 'main', width = 620, height = 820 } = {}) {
  const page = await browser.newPage({ viewport: { width, height } })
  const problems = []
  page.on('pageerror', (e) => problems.push(`pageerror: ${e}`))
  page.on('console', (m) => {
    if (m.type() === 'error' || /Content Security Policy/i.test(m.text())) problems.push(`console: ${m.text()}`)
  })
  page.on('dialog', (d) => {
    problems.push(`dialog: ${d.message()}`)
    void d.dismiss()
  })
  await page.addInitScript(({ f, l }) => {
    window.__PARLEY_FIXTURES__ = f
    window.__PARLEY_WINDOW__ = l
  }, { f: fixtures, l: label })
  await page.addInitScript({ path: mock })
  await page.goto(`${base}/${file}`)
  page.problems = problems
  return page
}

export const calls = (page, cmd) => page.evaluate((c) => window.__parleyCalls.filter(([x]) => x === c).map(([, a]) => a), cmd)
export const tid = (id) => `[data-testid="${id}"]`
export const text = (page, id) => page.locator(tid(id)).first().innerText()

/** Waits until the control `id` is enabled. */
export const enabled = (page, id) => page.waitForFunction((i) => !document.querySelector(`[data-testid="${i}"]`).disabled, id)
/** The approvals the page sent (`review_decide` calls that approve). */
export const approvals = async (page) => (await calls(page, 'review_decide')).filter((c) => c.approve)
/** Waits until Approve is enabled; resolves to a handle on the page's `performance.now()` then. */
export const approveOn = (page) => page.waitForFunction(() => !document.querySelector('[data-testid="approve"]').disabled && performance.now())
