// Plain words and one name (issue 28), in a real headless browser (Debian's Chromium through
// playwright-core), against the built ui/dist served with the app's own CSP,
// with the Tauri IPC mocked (tests/mock.ts over @tauri-apps/api/mocks).
// Run: npm run build && npm test   (scripts/test-app.sh does both).

import { test } from 'node:test'
import assert from 'node:assert/strict'
import { open, calls, tid, text } from './pages.mjs'
import { consent, status, event, now, AGENT } from './fixtures.mjs'

test('audit: the Details column wraps at 900 px instead of hiding behind a scrollbar; lists read "a, b"; a used consent is not live', async () => {
  const view = {
    events: [
      event({ seq: 3, kind: 'grant_issued', agent_label: 'shopper', agent_name: 'shopper', service: 'shop.example,cal.example.com', cost: null, hash: null, caveat_words: ['only at the services "shop.example" and "cal.example.com"'], preview: 'shopper may ask for offers, state intents and commit at shop.example and cal.example.com, up to 40.00 USD each, until 18:00 tomorrow', reason: 'issued from the grant form, with a reason that is a whole sentence long' }),
      event({ seq: 2, kind: 'consent_denied', agent_name: 'cactus orbit lemon frost', reason: 'too expensive for what it is, said the human in a long sentence' }),
      event({ seq: 1, agent_name: 'cactus orbit lemon frost' }),
    ],
    truncated: false,
    live: [event({ seq: 1, agent_name: 'cactus orbit lemon frost' }), event({ seq: 3, kind: 'grant_issued', agent_name: 'shopper', service: 'shop.example,cal.example.com', preview: 'may do anything', caveat_words: [] })],
    verify: { rows: 3, ok: true, first_bad_seq: null, problem: null },
    now: now(),
  }
  const page = await open('audit.html', { audit_query: view, audit_export: { path: '/tmp/x', rows: 3 }, agent_pauses: { paused: [], agents: [], now: now() } }, { width: 900, height: 700 })
  await page.locator(tid('event-row')).first().waitFor()
  const overflow = await page.evaluate(() => [...document.querySelectorAll('.table-wrap')].map((w) => w.scrollWidth - w.clientWidth))
  assert.ok(overflow.every((d) => d <= 1), `no inner scrollbar: ${overflow}`)
  const clipped = await page.evaluate(() => [...document.querySelectorAll('.details > div')].filter((d) => d.scrollWidth > d.clientWidth + 1).map((d) => d.textContent))
  assert.deepEqual(clipped, [], 'no detail is cut')
  const rows = await page.locator(tid('event-row')).allInnerTexts()
  assert.match(rows[0], /shop\.example, cal\.example\.com/)
  assert.match(rows[0], /shopper/)
  assert.match(rows[1], /cactus orbit lemon frost/)
  // The live list holds the grant only; the consent is listed as given (used), apart.
  assert.equal(await page.locator(tid('live-row')).count(), 1)
  assert.match(await page.locator(tid('live-row')).innerText(), /^Grant/)
  assert.equal(await page.locator(tid('used-row')).count(), 1)
  assert.match(await text(page, 'one-shot'), /given to the agent for its one use/)
  assert.doesNotMatch(await page.locator('main').innerText(), /Live grants and consents/)
  assert.deepEqual(page.problems, [])
  await page.close()
})

test('home: nothing waiting, no "Waiting for you" card; a request names its agent by name, not key', async () => {
  const page = await open('index.html', { status: status(), pending_list: [], open_window: null })
  await page.locator(tid('identity')).waitFor({ state: 'attached' })
  await page.waitForTimeout(300)
  assert.equal(await page.locator(tid('pending-section')).isHidden(), true)
  await page.evaluate((c) => { window.__PARLEY_FIXTURES__.pending_list = [c] }, consent({ review: { agent: { key: AGENT, short: 'ed25519:gTl3Dqh9F1…', phrase: 'cactus orbit lemon frost', label: null, name: 'cactus orbit lemon frost', known: true } } }))
  await page.evaluate(() => window.__parleyEmit('pending-changed'))
  await page.locator(tid('pending-item')).waitFor()
  assert.equal(await page.locator(tid('pending-section')).isHidden(), false)
  const item = await text(page, 'pending-item')
  assert.match(item, /^“cactus orbit lemon frost” asks you to approve/)
  assert.doesNotMatch(item, /ed25519/)
  assert.deepEqual(page.problems, [])
  await page.close()
})

test('home: with no tray host, Quit is in the main window', async () => {
  const page = await open('index.html', { status: status({ tray: { available: false, message: 'No tray icon: this desktop has no tray host.' } }), pending_list: [], open_window: null, app_quit: null })
  await page.locator(tid('quit')).click()
  await page.waitForFunction(() => window.__parleyCalls.some(([c]) => c === 'app_quit'))
  assert.deepEqual(page.problems, [])
  await page.close()
  const withTray = await open('index.html', { status: status(), pending_list: [], open_window: null })
  await withTray.locator(tid('identity')).waitFor({ state: 'attached' })
  await withTray.waitForTimeout(200)
  assert.equal(await withTray.locator(tid('quit')).count(), 0, 'the tray menu has Quit')
  await withTray.close()
})
