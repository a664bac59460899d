// UI logic in a real headless browser (Debian's Chromium through
// playwright-core), against the built ui/dist served with the app's own CSP,
// with the Tauri IPC mocked (tests/mock.ts over @tauri-apps/api/mocks).
// Run: npm run build && npm test   (scripts/test-app.sh does both).

import { test } from 'node:test'
import assert from 'node:assert/strict'
import { readFile, readdir } from 'node:fs/promises'
import { join, dirname } from 'node:path'
import { fileURLToPath } from 'node:url'
import { open, calls, tid, text, enabled, approvals, approveOn } from './pages.mjs'
import { consent, grantRequest, status, event, now, reviewFixtures, settingsView, AGENT, PRINCIPAL, HASH, APPROVE_DELAY_MS } from './fixtures.mjs'

const here = dirname(fileURLToPath(import.meta.url))

test('review: the agent can be named from its review, and the name shows at once', async () => {
  const p = consent()
  const page = await open('review.html#q1', reviewFixtures(p, { agent_label_set: null }), { label: 'review-q1' })
  await page.locator(tid('approve')).waitFor()
  assert.equal(await page.locator(tid('agent-name')).isVisible(), false, 'folded away until asked for')
  await page.locator(`${tid('agent-naming')} summary`).click()
  await page.locator(tid('agent-name')).fill(' shopping bot ')
  await page.locator(tid('agent-name-save')).click()
  await page.waitForFunction(() => /Saved/.test(document.querySelector('[data-testid="agent-name-status"]').textContent))
  assert.deepEqual(await calls(page, 'agent_label_set'), [{ agent: p.review.agent.key, label: 'shopping bot' }])
  assert.equal((await text(page, 'agent-label')).trim(), '“shopping bot”')
  assert.deepEqual(await calls(page, 'review_decide'), [], 'naming decides nothing')
  assert.deepEqual(page.problems, [])
  await page.close()
})

test('review: a YEA proposal shows every measure it uses, money as money, each on its own line', async () => {
  const p = consent({
    review: {
      dialect: 'yea1',
      cost: '22.87 USD, 3 emails',
      cost_money: { amount: 2287, currency: 'USD' },
      uses: [
        { measure: 'spend', words: '22.87 USD', money: { amount: 2287, currency: 'USD' } },
        { measure: 'emails', words: '3 emails', money: null },
      ],
    },
  })
  const page = await open('review.html#q1', reviewFixtures(p), { label: 'review-q1' })
  await page.locator(tid('approve')).waitFor()
  assert.deepEqual(await page.locator(tid('use')).allInnerTexts(), ['22.87 USD', '3 emails'])
  const label = await page.locator(tid('cost')).evaluate((el) => el.previousElementSibling.textContent)
  assert.equal(label, 'Uses')
  assert.equal(await text(page, 'headline'), '22.87 USD, 3 emails at shop.example')
  assert.deepEqual(page.problems, [])
  await page.close()
})

test('review: a long grant review opens at its top, in a window that fits 768 px, and hides nothing in a nested scroll box', async () => {
  const caveats = [{ svc: ['shop.example', 'cal.example.com'] }, { verbs: ['ASK', 'INTENT', 'COMMIT'] }, { can: ['shop.*', 'cal.book'] }, { per: { max: 4000, currency: 'USD' } }, { spend: { max: 10000, currency: 'USD' } }, { risk: 'medium' }, { nbf: now() + 60 }, { exp: now() + 3600 }]
  const req = grantRequest({ caveats })
  req.review.caveats = caveats.map((c) => ({ json: c, words: `the condition ${JSON.stringify(c)}, in words that take some room on the line` }))
  req.review.effects = Array.from({ length: 40 }, (_, i) => ({ op: 'other', line: `· effect ${i}` }))
  const page = await open('review.html#q7', reviewFixtures(req), { label: 'review-q7', width: 620, height: 680 })
  await page.locator(tid('approve')).waitFor()
  assert.equal(await page.evaluate(() => window.scrollY), 0, 'opened at the top')
  assert.ok(await page.locator(tid('headline')).isVisible())
  assert.equal(await page.evaluate(() => document.activeElement?.dataset.testid), 'deny', 'Deny still has the focus')
  // No element scrolls on its own: everything is in the page's one scroll.
  const nested = await page.evaluate(() => [...document.querySelectorAll('body *')].filter((el) => { const s = getComputedStyle(el); return /(auto|scroll)/.test(s.overflowY) && el.scrollHeight > el.clientHeight + 1 }).map((el) => el.className || el.tagName))
  assert.deepEqual(nested, [])
  assert.deepEqual(page.problems, [])
  await page.close()
})

// The review window's inside on a 1366×768 screen with a panel, and on a 1024×600 one
// (src-tauri/src/windows.rs: the window is sized to the work area, less the title bar).
const SCREENS = [{ name: '1366×768', width: 620, height: 680 }, { name: '1024×600', width: 620, height: 520 }]

test('review: a control scrolled into view (the name field, its Save) stops above the footer, never under it', async () => {
  const p = consent()
  p.review.effects = Array.from({ length: 30 }, (_, i) => ({ op: 'other', line: `· effect ${i}` }))
  const page = await open('review.html#q1', reviewFixtures(p), { label: 'review-q1', width: 620, height: 520 })
  await page.locator(tid('approve')).waitFor()
  await page.evaluate(() => (document.querySelector('[data-testid="agent-naming"]').open = true))
  for (const id of ['agent-name', 'agent-name-save']) {
    await page.evaluate(() => window.scrollTo(0, 0))
    // As WebDriver and keyboard focus scroll: to the element's end.
    await page.evaluate((id) => document.querySelector(`[data-testid="${id}"]`).scrollIntoView({ block: 'end' }), id)
    const [el, foot] = await page.evaluate((id) => [document.querySelector(`[data-testid="${id}"]`), document.querySelector('[data-testid="footer"]')].map((e) => e.getBoundingClientRect().toJSON()), id)
    assert.ok(el.bottom <= foot.top + 0.5, `${id} ends at ${el.bottom}, the footer starts at ${foot.top}`)
  }
  assert.deepEqual(page.problems, [])
  await page.close()
})

test('review: on 1366×768 and 1024×600 the footer (Deny, Approve, the status) is on screen without scrolling, however long the review', async () => {
  const p = consent({ review: { why: { rule: 'per_exceeded', words: 'Your grant allows 40.00 USD per order; this is 71.36 USD (31.36 USD over); custody approved 0.00 USD of its 100.00 USD since it was issued' } } })
  p.review.effects = Array.from({ length: 30 }, (_, i) => ({ op: 'other', line: `· effect ${i}` }))
  for (const screen of SCREENS) {
    const page = await open('review.html#q1', reviewFixtures(p), { label: 'review-q1', width: screen.width, height: screen.height })
    await page.locator(tid('approve')).waitFor()
    const inView = async () =>
      page.evaluate(() =>
        ['deny', 'approve', 'approve-hint', 'footer'].map((id) => {
          const r = document.querySelector(`[data-testid="${id}"]`).getBoundingClientRect()
          return { id, ok: r.top >= 0 && r.bottom <= window.innerHeight + 0.5 && r.height > 0 }
        }),
      )
    assert.equal(await page.evaluate(() => window.scrollY), 0, `${screen.name}: opened at the top`)
    assert.deepEqual((await inView()).filter((x) => !x.ok), [], `${screen.name}: the footer is on screen at the top`)
    // The amount, and why custody asks, are above the fold too.
    for (const id of ['headline', 'why']) {
      const box = await page.locator(tid(id)).boundingBox()
      assert.ok(box && box.y >= 0 && box.y + box.height <= screen.height - 80, `${screen.name}: ${id} above the footer (${JSON.stringify(box)})`)
    }
    await page.evaluate(() => window.scrollTo(0, document.body.scrollHeight))
    assert.deepEqual((await inView()).filter((x) => !x.ok), [], `${screen.name}: and at the bottom`)
    // The result of a decision shows in the footer.
    await enabled(page, 'approve')
    await page.locator(tid('approve')).click()
    const status = page.locator(`${tid('footer')} ${tid('status')}.msg-ok`)
    await status.waitFor()
    const box = await status.boundingBox()
    assert.ok(box.y >= 0 && box.y + box.height <= screen.height + 0.5, `${screen.name}: the result is on screen`)
    if (process.env.UPDATE_SCREENSHOTS && screen.name === '1024×600') {
      await page.evaluate(() => window.scrollTo(0, 0))
      await page.screenshot({ path: join(here, '..', '..', 'docs', 'screenshots', 'review-approved-1024x600.png') })
    }
    assert.deepEqual(page.problems, [])
    await page.close()
  }
})

test('review: says why custody asks, in its words, right after what the service says it is', async () => {
  const words = 'Your grant allows 40.00 USD per order; this is 71.36 USD (31.36 USD over); custody approved 0.00 USD of its 100.00 USD since it was issued'
  const p = consent({ review: { why: { rule: 'per_exceeded', words } } })
  const page = await open('review.html#q1', reviewFixtures(p), { label: 'review-q1', width: 620, height: 680 })
  await page.locator(tid('why')).waitFor()
  assert.equal(await text(page, 'why'), words)
  const order = await page.evaluate(() => ['headline', 'summary', 'why', 'requester', 'service'].map((i) => document.querySelector(`[data-testid="${i}"]`)).every((el, k, a) => k === 0 || a[k - 1].compareDocumentPosition(el) & Node.DOCUMENT_POSITION_FOLLOWING))
  assert.ok(order, 'amount, what, why, who, then the details')
  assert.match(await text(page, 'kind'), /^“cactus orbit lemon frost” asks for your consent$/)
  if (process.env.UPDATE_SCREENSHOTS) await page.screenshot({ path: join(here, '..', '..', 'docs', 'screenshots', 'review-consent.png') })
  await page.close()
})

test('review: Esc while typing in a field does not deny; Enter in the name field saves the name', async () => {
  const p = consent()
  const page = await open('review.html#q1', reviewFixtures(p, { agent_label_set: null }), { label: 'review-q1' })
  await page.locator(tid('agent-naming')).locator('summary').click()
  await page.locator(tid('agent-name')).fill('shopping bot')
  await page.keyboard.press('Escape')
  await page.locator(tid('agent-name')).focus()
  await page.keyboard.press('Enter')
  await page.waitForFunction(() => /Saved/.test(document.querySelector('[data-testid="agent-name-status"]').textContent))
  assert.deepEqual(await calls(page, 'agent_label_set'), [{ agent: p.review.agent.key, label: 'shopping bot' }])
  await page.locator('#reason').fill('too dear')
  await page.keyboard.press('Escape')
  await page.waitForTimeout(200)
  assert.deepEqual(await calls(page, 'review_decide'), [], 'Esc in a field, and Enter in the name field, decide nothing')
  // Outside a field, Esc still denies.
  await page.locator(tid('headline')).click()
  await page.keyboard.press('Escape')
  await page.locator(`${tid('status')}:not([hidden])`).waitFor()
  assert.equal((await calls(page, 'review_decide'))[0].approve, false)
  await page.close()
})

test('review: Tab cycles within the page and never disarms Approve', async () => {
  const page = await open('review.html#q1', reviewFixtures(consent()), { label: 'review-q1' })
  await enabled(page, 'approve')
  for (let i = 0; i < 30; i++) {
    await page.keyboard.press(i % 7 === 6 ? 'Shift+Tab' : 'Tab')
    const where = await page.evaluate(() => ({ inPage: document.activeElement !== document.body && document.hasFocus(), id: document.activeElement?.dataset.testid ?? document.activeElement?.id ?? document.activeElement?.tagName }))
    assert.ok(where.inPage, `Tab ${i} stays in the page (${where.id})`)
    assert.notEqual(where.id, 'approve')
    assert.equal(await page.locator(tid('approve')).isDisabled(), false, `Approve stays armed after Tab ${i}`)
  }
  // A document blur (focus moving to the webview's chrome) is not the window losing focus.
  await page.evaluate(() => window.dispatchEvent(new Event('blur')))
  assert.equal(await page.locator(tid('approve')).isDisabled(), false)
  assert.doesNotMatch(await text(page, 'approve-hint'), /not in front/)
  await page.close()
})

test('review: with no authentication agent, the review says what happened and what to do, and Approve waits', async () => {
  const message = 'Custody could not ask for your password: no authentication agent is running in this session. Nothing was signed, and the request still waits. Start your desktop’s authentication agent (for example lxpolkit) and approve again, or decide at a terminal.'
  const page = await open('review.html#q1', reviewFixtures(consent(), { review_decide: { __error: { code: 'not_authenticated', message } } }), { label: 'review-q1', width: 620, height: 520 })
  await enabled(page, 'approve')
  await page.locator(tid('approve')).click()
  const guidance = page.locator(tid('step-up-guidance'))
  await guidance.waitFor()
  assert.match(await guidance.innerText(), /^Custody could not ask for your password: no authentication agent/)
  const box = await guidance.boundingBox()
  assert.ok(box.y >= 0 && box.y + box.height <= 520, 'the guidance is on screen, in the footer')
  assert.equal(await page.locator(tid('approve')).isDisabled(), true, 'Approve does not sit live')
  assert.match(await text(page, 'approve-hint'), /authentication agent/)
  assert.equal(await page.locator(`${tid('status')}.msg-error`).count(), 0, 'no red error')
  if (process.env.UPDATE_SCREENSHOTS) await page.screenshot({ path: join(here, '..', '..', 'docs', 'screenshots', 'review-no-auth-agent.png') })
  await page.locator(tid('step-up-retry')).click()
  assert.equal(await guidance.isHidden(), true)
  await enabled(page, 'approve')
  await page.close()
})

test('review: other waiting requests are counted in the footer, with the way to them', async () => {
  const page = await open('review.html#q1', reviewFixtures(consent(), { status: status({ pending: 3 }) }), { label: 'review-q1' })
  await page.locator(`${tid('queue')}:not(.queue-none)`).waitFor()
  assert.match(await text(page, 'queue'), /^2 more waiting/)
  await page.locator(tid('queue-open')).click()
  assert.deepEqual(await calls(page, 'open_window'), [{ kind: 'main', id: null, agent: null }])
  // The footer keeps its height whether or not others wait: Approve never moves under the pointer.
  const at = async () => (await page.locator(tid('approve')).boundingBox()).y
  const before = await at()
  await page.evaluate(() => {
    window.__PARLEY_FIXTURES__.status.pending = 1
    return window.__parleyEmit('pending-changed')
  })
  await page.locator(`${tid('queue')}.queue-none`).waitFor({ state: 'attached' })
  assert.equal(await at(), before, 'Approve did not move')
  await page.close()
})

test('review: a grant request\u2019s heading has a subject', async () => {
  const page = await open('review.html#q7', reviewFixtures(grantRequest()), { label: 'review-q7' })
  await page.locator(tid('headline')).waitFor()
  assert.match(await text(page, 'headline'), /^“cactus orbit lemon frost” may /)
  await page.close()
})

test('review: the heading marks the agent\u2019s one name as a name, its four words or the human\u2019s name, as home and notifications do', async () => {
  // Unnamed: the four words, quoted (never bare words run into the sentence).
  for (const [p, id, want] of [
    [consent(), 'kind', '“cactus orbit lemon frost” asks for your consent'],
    [grantRequest(), 'headline', /^“cactus orbit lemon frost” may ASK/],
    [consent({ review: { agent: { key: AGENT, short: 'ed25519:gTl3Dqh9F1…', phrase: 'cactus orbit lemon frost', label: 'shopping bot', name: 'shopping bot', known: true } } }), 'kind', '“shopping bot” asks for your consent'],
  ]) {
    const page = await open(`review.html#${p.id}`, reviewFixtures(p), { label: `review-${p.id}` })
    await page.locator(tid(id)).waitFor()
    if (typeof want === 'string') assert.equal(await text(page, id), want)
    else assert.match(await text(page, id), want)
    assert.deepEqual(page.problems, [])
    await page.close()
  }
})

test('review: renamed while open (here or in another window), every line that names the agent says the new name', async () => {
  const p = consent()
  const page = await open('review.html#q1', reviewFixtures(p, { agent_label_set: null, status: status({ pending: 1 }) }), { label: 'review-q1' })
  await page.locator(tid('approve')).waitFor()
  assert.equal(await text(page, 'kind'), '“cactus orbit lemon frost” asks for your consent')
  // Named from this review.
  await page.locator(`${tid('agent-naming')} summary`).click()
  await page.locator(tid('agent-name')).fill('shopping bot')
  await page.locator(tid('agent-name-save')).click()
  await page.waitForFunction(() => /shopping bot/.test(document.querySelector('[data-testid="kind"]').textContent))
  assert.equal(await text(page, 'kind'), '“shopping bot” asks for your consent')
  assert.equal((await text(page, 'agent-label')).trim(), '“shopping bot”')
  // Renamed in the audit view: custody tells every window (pending-changed), and its view names it so.
  await page.evaluate(() => {
    const f = window.__PARLEY_FIXTURES__
    f.review_get = { ...f.review_get, review: { ...f.review_get.review, agent: { ...f.review_get.review.agent, label: 'groceries', name: 'groceries' } } }
    return window.__parleyEmit('pending-changed')
  })
  await page.waitForFunction(() => /groceries/.test(document.querySelector('[data-testid="kind"]').textContent))
  assert.equal(await text(page, 'kind'), '“groceries” asks for your consent')
  assert.equal((await text(page, 'agent-label')).trim(), '“groceries”')
  assert.deepEqual(await calls(page, 'review_decide'), [], 'a rename decides nothing')
  assert.deepEqual(page.problems, [])
  await page.close()
})

test('review: every field, in the order the architecture asks', async () => {
  const p = consent()
  const page = await open('review.html#q1', reviewFixtures(p), { label: 'review-q1' })
  await page.locator(tid('approve')).waitFor()
  assert.equal(await text(page, 'service'), 'shop.example')
  assert.equal(await text(page, 'capability'), 'shop.order')
  assert.equal(await text(page, 'cost'), '71.36 USD')
  const costSize = await page.locator(tid('cost')).evaluate((el) => parseFloat(getComputedStyle(el).fontSize))
  assert.ok(costSize >= 28, `the cost is large (${costSize}px)`)
  assert.equal(await text(page, 'risk'), 'medium')
  assert.equal(await text(page, 'undo'), 'can be undone within 30m')
  assert.deepEqual(await page.locator(`${tid('effects')} li`).allInnerTexts(), ['+ create order', '$ charge card ••42 — 71.36 USD'])
  assert.match(await text(page, 'countdown'), /^Closes in (9m 5\d|10m 00)s/)
  assert.equal(await text(page, 'requester'), 'user agent (uid 1001), pid 4242, /usr/bin/python3.11')
  assert.equal(await text(page, 'requester-chain'), 'from python3.11 (4242) ← bash (4100) ← kitty (3900)')
  assert.equal(await text(page, 'agent-activity'), 'this agent: 3 consents signed, 3 consents this week, 184.20 USD, 1 grant live now')
  assert.equal(await text(page, 'agent-key'), 'ed25519:gTl3Dqh9F1…')
  assert.equal(await text(page, 'agent-new'), 'never granted to before')
  assert.equal(await text(page, 'agent-phrase'), 'cactus orbit lemon frost')
  assert.equal(await text(page, 'summary'), 'Order 3 items')
  assert.match(await page.locator('.their-words h2').innerText(), /What the service says it is \(its words, not checked\)/)
  assert.equal(await text(page, 'hash'), `${HASH.slice(0, 12)}…`)
  assert.match(await text(page, 'step-up'), /asks for your password \(OS authentication\) before anything is signed/)
  // The order a person decides in: the amount, what (the service's words), who asks, then every
  // detail (service, capability, cost, risk, undo, effects, hash), the countdown, whether the OS
  // will ask for the password, and the footer's buttons.
  const order = ['headline', 'summary', 'requester', 'agent-key', 'service', 'capability', 'cost', 'risk', 'undo', 'effects', 'hash', 'countdown', 'step-up', 'deny', 'approve']
  const positions = await page.evaluate((ids) => ids.map((i) => document.querySelector(`[data-testid="${i}"]`)), order)
  assert.equal(positions.length, order.length)
  const sorted = await page.evaluate((ids) => {
    const els = ids.map((i) => document.querySelector(`[data-testid="${i}"]`))
    return els.every((el, k) => k === 0 || els[k - 1].compareDocumentPosition(el) & Node.DOCUMENT_POSITION_FOLLOWING)
  }, order)
  assert.ok(sorted, 'fields appear in order')
  assert.deepEqual(page.problems, [])
  await page.close()
})

test('review: hostile strings are text, made visible, and bounded', async () => {
  const long = `card ${'x'.repeat(10_000)}`
  const p = consent({
    review: {
      service: 'shop.example<img src=x onerror="window.__pwned=1">',
      their_words: '<script>window.__pwned=2</script><b>Free!</b> pay \u202eereh\u200b now',
      effects: [
        { op: 'charge', line: `$ charge ${long}` },
        { op: 'send', line: '> send a\u202eb — x\u200by\u2066z\u2069' },
        { op: 'other', line: '* other <a href="https://evil.example">click</a>' },
      ],
      requester: { user: 'ag\u202eent', uid: 1001, pid: 1, exe: '/tmp/\u200bpython' },
      warnings: ['The service id contains non-ASCII characters: check it for look-alike letters.'],
    },
  })
  const page = await open('review.html#q1', reviewFixtures(p), { label: 'review-q1' })
  await page.locator(tid('approve')).waitFor()
  assert.equal(await page.evaluate(() => window.__pwned), undefined, 'no script ran')
  assert.equal(await page.locator('main img, main script, main a, main b').count(), 0, 'no markup was interpreted')
  assert.equal(await text(page, 'service'), 'shop.example<img src=x onerror="window.__pwned=1">')
  assert.equal(await text(page, 'summary'), '<script>window.__pwned=2</script><b>Free!</b> pay \\u{202e}ereh\\u{200b} now')
  const lines = await page.locator(`${tid('effects')} li`).allInnerTexts()
  assert.equal(lines[1], '> send a\\u{202e}b — x\\u{200b}y\\u{2066}z\\u{2069}')
  assert.equal(lines[2], '* other <a href="https://evil.example">click</a>')
  assert.match(lines[0], /… \(\d+ more characters not shown\)$/, 'a 10,000-character target is cut visibly')
  assert.ok(lines[0].length < 4200)
  assert.match(await text(page, 'requester'), /user ag\\u\{202e\}ent .*\/tmp\/\\u\{200b\}python/)
  // Nothing is pushed off screen sideways, and the buttons stay reachable.
  const layout = await page.evaluate(() => ({ sw: document.documentElement.scrollWidth, w: window.innerWidth }))
  assert.ok(layout.sw <= layout.w, `no horizontal overflow (${layout.sw} > ${layout.w})`)
  await page.locator(tid('approve')).scrollIntoViewIfNeeded()
  assert.ok(await page.locator(tid('approve')).isVisible())
  assert.match(await text(page, 'warnings'), /look-alike/)
  assert.deepEqual(page.problems, [])
  await page.close()
})

test('review: Approve waits for the delay, and again after the window regains focus', async () => {
  const page = await open('review.html#q1', reviewFixtures(consent()), { label: 'review-q1' })
  const approve = page.locator(tid('approve'))
  await approve.waitFor()
  const t0 = Date.now()
  assert.equal(await approve.isDisabled(), true, 'disabled at first')
  assert.match(await text(page, 'approve-hint'), /^Approve in [01]\.\d s$/)
  // A click while it is disabled does nothing.
  await approve.click({ force: true })
  assert.deepEqual(await calls(page, 'review_decide'), [])
  // Measured in the page, from its navigation start: the delay starts even later (once the review is loaded).
  const enabledAt = await (await approveOn(page)).jsonValue()
  assert.ok(enabledAt >= APPROVE_DELAY_MS, `enabled only after the delay (${enabledAt} ms after the page started)`)
  assert.ok(Date.now() - t0 < 10_000)
  // Losing the window's focus (as the app reports it) disables it; regaining it restarts the delay.
  await page.evaluate(() => window.__parleyEmit('tauri://blur'))
  await page.waitForFunction(() => document.querySelector('[data-testid="approve"]').disabled)
  assert.equal(await approve.isDisabled(), true, 'off while not focused')
  assert.match(await text(page, 'approve-hint'), /not in front/)
  await page.waitForTimeout(APPROVE_DELAY_MS + 100)
  assert.equal(await approve.isDisabled(), true, 'still off without focus')
  const focusedAt = await page.evaluate(async () => {
    const t = performance.now()
    await window.__parleyEmit('tauri://focus')
    return t
  })
  assert.equal(await approve.isDisabled(), true, 'off right after focus returns')
  const reEnabledAt = await (await page.waitForFunction(() => !document.querySelector('[data-testid="approve"]').disabled && performance.now())).jsonValue()
  assert.ok(reEnabledAt - focusedAt >= APPROVE_DELAY_MS - 50, `the delay restarts on focus (${reEnabledAt - focusedAt} ms)`)
  await approve.click()
  await page.locator(`${tid('status')}.msg-ok`).waitFor()
  assert.deepEqual(await calls(page, 'review_decide'), [{ id: 'q1', approve: true, confirmed: false, gesture: 'click', reason: null }])
  assert.equal(await approve.isDisabled(), true, 'decided once')
  // The result stays in the footer long enough to read, then the window closes.
  await page.waitForTimeout(2500)
  assert.equal((await calls(page, 'window_close')).length, 0, 'the result is still on screen')
  assert.ok(await page.locator(`${tid('footer')} ${tid('status')}.msg-ok`).isVisible())
  await page.waitForFunction(() => window.__parleyCalls.some(([c]) => c === 'window_close'), null, { timeout: 4000 })
  await page.close()
})

test('review: Deny is the default — focused, Enter and Esc deny', async () => {
  for (const key of ['Enter', 'Escape']) {
    const page = await open('review.html#q1', reviewFixtures(consent(), { review_decide: { outcome: 'denied', message: 'Denied.' } }), { label: 'review-q1' })
    await page.locator(tid('approve')).waitFor()
    assert.equal(await page.evaluate(() => document.activeElement?.dataset.testid), 'deny')
    await page.keyboard.press(key)
    await page.locator(`${tid('status')}:not([hidden])`).waitFor()
    const c = await calls(page, 'review_decide')
    assert.equal(c.length, 1, key)
    assert.equal(c[0].approve, false, `${key} denies`)
    await page.close()
  }
  // A reason typed for the agent goes with the denial.
  const page = await open('review.html#q1', reviewFixtures(consent(), { review_decide: { outcome: 'denied', message: 'Denied.' } }), { label: 'review-q1' })
  await page.locator('#reason').fill('too expensive')
  await page.locator(tid('deny')).click()
  await page.locator(`${tid('status')}:not([hidden])`).waitFor()
  assert.deepEqual(await calls(page, 'review_decide'), [{ id: 'q1', approve: false, confirmed: false, gesture: null, reason: 'too expensive' }])
  await page.close()
})

test('review: high risk or irreversible asks for a second confirmation', async () => {
  const p = consent({ review: { risk: 'high', irreversible: true, undo: 'irreversible', needs_second_confirmation: true } })
  const page = await open('review.html#q1', reviewFixtures(p), { label: 'review-q1' })
  await page.locator(tid('approve')).waitFor()
  assert.equal(await text(page, 'undo'), 'IRREVERSIBLE — cannot be undone')
  await page.waitForFunction(() => !document.querySelector('[data-testid="approve"]').disabled)
  await page.locator(tid('approve')).click()
  await page.locator(tid('confirm')).waitFor()
  assert.match(await text(page, 'confirm'), /HIGH RISK and cannot be undone/)
  assert.deepEqual(await calls(page, 'review_decide'), [], 'the first click alone approves nothing')
  assert.equal(await page.evaluate(() => document.activeElement?.dataset.testid), 'confirm-deny', 'No is the default')
  assert.equal(await page.locator(tid('confirm-approve')).isDisabled(), true)
  await page.waitForFunction(() => !document.querySelector('[data-testid="confirm-approve"]').disabled)
  await page.locator(tid('confirm-approve')).click()
  await page.locator(`${tid('status')}.msg-ok`).waitFor()
  assert.deepEqual(await calls(page, 'review_decide'), [{ id: 'q1', approve: true, confirmed: true, gesture: 'click', reason: null }])
  await page.close()
})


test('review: Tab then Space or Enter never approves; a script-made click neither; a pointer click does', async () => {
  const page = await open('review.html#q1', reviewFixtures(consent()), { label: 'review-q1' })
  await page.locator(tid('approve')).waitFor()
  await enabled(page, 'approve')
  // Tab walks the window's controls; Approve is never one of them.
  const reached = []
  for (let i = 0; i < 6; i++) {
    await page.keyboard.press('Tab')
    const at = await page.evaluate(() => document.activeElement?.dataset.testid ?? document.activeElement?.id ?? '')
    reached.push(at)
    // Space or Enter on Deny would deny (rightly); everywhere else, press both.
    if (at !== 'deny') {
      await page.keyboard.press('Space')
      await page.keyboard.press('Enter')
    }
  }
  assert.ok(!reached.includes('approve'), `Tab never reaches Approve: ${reached}`)
  // (Tabbing out of the page and back re-arms the delay.)
  await enabled(page, 'approve')
  // Even focused on purpose, the keys do nothing to it.
  await page.evaluate(() => document.querySelector('[data-testid="approve"]').focus())
  assert.equal(await page.evaluate(() => document.activeElement?.dataset.testid), 'approve')
  await page.keyboard.press('Space')
  await page.keyboard.press('Enter')
  await page.evaluate(() => {
    const b = document.querySelector('[data-testid="approve"]')
    b.click()
    b.dispatchEvent(new MouseEvent('click', { bubbles: true, detail: 1 }))
  })
  await page.waitForTimeout(300)
  assert.deepEqual(await approvals(page), [], 'no approval from keys or scripts')
  await page.locator(tid('approve')).click()
  await page.locator(`${tid('status')}.msg-ok`).waitFor()
  assert.deepEqual(await approvals(page), [{ id: 'q1', approve: true, confirmed: false, gesture: 'click', reason: null }])
  await page.close()
})

test('review: press-and-hold approves; letting go early does not', async () => {
  const page = await open('review.html#q1', reviewFixtures(consent()), { label: 'review-q1' })
  await enabled(page, 'approve')
  // A review with more lines (the process chain, the agent's record) may put the button below the fold.
  await page.locator(tid('approve')).scrollIntoViewIfNeeded()
  const box = await page.locator(tid('approve')).boundingBox()
  const [x, y] = [box.x + box.width / 2, box.y + box.height / 2]
  // Held for a moment, then slid off the button: nothing.
  await page.mouse.move(x, y)
  await page.mouse.down()
  await page.waitForTimeout(300)
  assert.equal(await page.locator(tid('approve')).getAttribute('data-holding'), 'true')
  await page.mouse.move(x, y + 200)
  await page.mouse.up()
  await page.waitForTimeout(1200)
  assert.deepEqual(await approvals(page), [], 'an early release approves nothing')
  // Held for the whole time: one approval, the release adds none.
  await page.mouse.move(x, y)
  await page.mouse.down()
  await page.locator(`${tid('status')}.msg-ok`).waitFor({ timeout: 3000 })
  await page.mouse.up()
  await page.waitForTimeout(200)
  assert.deepEqual(await approvals(page), [{ id: 'q1', approve: true, confirmed: false, gesture: 'hold', reason: null }])
  await page.close()
})

test('review: the signing principal is named; "says free but charges" stands out above the facts', async () => {
  const p = consent({
    review: {
      cost: 'not stated (an effect charges)',
      cost_money: null,
      principal_label: 'household',
      principal_short: 'ed25519:iojj3XQJ8Z…',
      warnings: ['SAYS FREE BUT CHARGES: the proposal states no cost, yet an effect charges. Nothing limits what it charges; deny unless you know the amount.'],
      needs_second_confirmation: true,
    },
  })
  const page = await open('review.html#q1', reviewFixtures(p), { label: 'review-q1' })
  await page.locator(tid('approve')).waitFor()
  assert.equal(await text(page, 'principal'), '“household” ed25519:iojj3XQJ8Z…')
  assert.equal(await text(page, 'cost'), 'not stated (an effect charges)')
  assert.match(await page.locator(tid('cost')).getAttribute('class'), /cost-unstated/)
  assert.match(await text(page, 'warnings'), /^SAYS FREE BUT CHARGES/)
  const first = await page.evaluate(() => document.querySelector('[data-testid="warnings"]').compareDocumentPosition(document.querySelector('[data-testid="service"]')) & Node.DOCUMENT_POSITION_FOLLOWING)
  assert.ok(first, 'the warnings come before the facts')
  assert.match(await text(page, 'effect-count'), /\(2 effects\)/)
  await page.close()
})

test('review: a withdrawn or expired request closes; a missing one says so', async () => {
  let page = await open('review.html#q1', reviewFixtures(consent()), { label: 'review-q1' })
  await page.locator(tid('approve')).waitFor()
  await page.evaluate(() => window.__parleyEmit('pending-withdrawn', 'q1'))
  await page.locator(`${tid('status')}.msg-warn`).waitFor()
  assert.match(await text(page, 'status'), /no longer waiting/)
  await page.waitForTimeout(APPROVE_DELAY_MS + 100)
  assert.equal(await page.locator(tid('approve')).isDisabled(), true)
  assert.equal(await page.locator(tid('deny')).isDisabled(), true)
  await page.close()

  const t = now()
  page = await open('review.html#q1', reviewFixtures(consent({ closes_at: t + 2 })), { label: 'review-q1' })
  await page.locator(tid('approve')).waitFor()
  await page.locator(`${tid('status')}.msg-warn`).waitFor({ timeout: 5000 })
  assert.match(await text(page, 'status'), /Expired: the request closed itself/)
  assert.equal(await page.locator(tid('approve')).isDisabled(), true)
  await page.close()

  page = await open('review.html#q1', { review_get: null, window_close: null }, { label: 'review-q1' })
  assert.match(await text(page, 'status'), /no longer waiting/)
  assert.equal(await page.locator(tid('approve')).count(), 0)
  await page.close()
})

test('review: a grant request shows the exact caveats and opens the grant form in the same window, and back', async () => {
  const req = grantRequest()
  const page = await open('review.html#q7', reviewFixtures(req, grantFixtures({ grant_context: { ...grantFixtures().grant_context, request: req } })), { label: 'review-q7' })
  await page.locator(tid('approve')).waitFor()
  assert.match(await text(page, 'preview'), /^may ASK, INTENT, COMMIT at shop\.example/)
  const items = await page.locator(`${tid('caveats')} li`).allInnerTexts()
  assert.equal(items.length, 4)
  assert.match(items[2], /"per":\{"max":4000,"currency":"USD"\}/)
  assert.match(await page.locator('.their-words h2').innerText(), /agent’s reason/)
  assert.equal(await text(page, 'summary'), 'weekly groceries')
  assert.match(await text(page, 'warnings'), /splitting/)
  // One window per request: the form replaces the review in this window
  // (no second window is asked for), answering this request only.
  await page.locator(tid('edit-grant')).click()
  await page.locator(tid('request-banner')).waitFor()
  assert.match(page.url(), /\/grant\.html#request=q7$/)
  assert.deepEqual(await calls(page, 'open_window'), [])
  await page.waitForFunction(() => window.__parleyCalls.some(([c]) => c === 'grant_context'))
  assert.deepEqual(await calls(page, 'grant_context'), [{ request: 'q7' }])
  assert.equal(await text(page, 'cancel'), 'Back to the review')
  assert.equal(await page.locator(tid('open-home')).count(), 0, 'a request’s form is not the main window')
  // Back: the same window shows the review again, nothing decided.
  await page.locator(tid('cancel')).click()
  await page.locator(tid('approve')).waitFor()
  assert.match(page.url(), /\/review\.html#q7$/)
  assert.match(await text(page, 'headline'), /may ASK, INTENT, COMMIT/)
  assert.deepEqual(await calls(page, 'window_close'), [])
  assert.deepEqual(await calls(page, 'review_decide'), [])
  assert.deepEqual(page.problems, [])
  await page.close()
})

function grantFixtures(extra = {}) {
  return {
    grant_context: {
      principals: [{ public: PRINCIPAL, short: 'ed25519:iojj3XQJ8Z…', label: 'principal', created_at: now(), source: 'created', status: 'present' }],
      known_agents: [{ key: AGENT, short: 'ed25519:gTl3Dqh9F1…', label: 'shopping bot', last_seen: now() - 3600, waiting: false }],
      max_grant_lifetime_secs: 7 * 86400,
      request: null,
    },
    grant_issue: { sent_to_agent: false, token: 'pg1.TOKEN', caveats: [], caveat_words: ['only at the services "shop.example"'], preview: 'may …', warnings: [] },
    grant_preview: { __echo: true, value: preview() },
    agent_label_set: null,
    window_close: null,
    ...extra,
  }
}

/** The grant form's preview as custody returns it (the mock echoes the caveats). */
/** The grant form in the home window (760×1000), once its agent field is there. */
async function openGrantForm(fixtures = grantFixtures()) {
  const page = await open('grant.html', fixtures, { label: 'main', width: 760, height: 1000 })
  await page.locator('#agent').waitFor()
  return page
}

function preview(over = {}) {
  return { caveat_words: [], preview: 'may, says custody, {caveats}', warnings: [], widenings: [], principal: PRINCIPAL, principal_label: 'principal', principal_short: 'ed25519:iojj3XQJ8Z…', ...over }
}
/** Waits until the button is enabled (armed, previewed). */

const errorOf = (page, field) => page.locator(`${tid(`err-${field}`)}`).first()

test('grant form: validation', async () => {
  const page = await openGrantForm()
  const issue = page.locator(tid('issue'))
  assert.equal(await issue.isDisabled(), true, 'nothing filled: cannot issue')
  // A blank form shows no errors until asked (or typed in).
  assert.equal(await page.locator('.field-error:not([hidden])').count(), 0, 'no red before anything is typed')
  await page.locator(tid('show-missing')).click()
  assert.match(await errorOf(page, 'agent').innerText(), /paste the agent’s key/)
  assert.match(await errorOf(page, 'services').innerText(), /at least one service/)
  // Each error is tied to its field.
  assert.equal(await page.locator('#per').getAttribute('aria-describedby'), 'err-per')
  assert.equal(await page.locator('#agent').getAttribute('aria-describedby'), 'err-agent')
  await page.locator('#agent').fill('ed25519:short')
  assert.match(await errorOf(page, 'agent').innerText(), /43 letters/)
  await page.locator('#agent').fill(AGENT)
  assert.equal(await errorOf(page, 'agent').isHidden(), true)
  await page.locator('#services').fill('shop.example')
  await enabled(page, 'issue') // agent, service, verbs and an expiry are enough
  // Verbs: at least one.
  for (const v of ['ASK', 'INTENT']) await page.locator(`#verb-${v}`).uncheck()
  assert.match(await errorOf(page, 'verbs').innerText(), /at least one verb/)
  assert.equal(await issue.isDisabled(), true)
  await page.locator('#verb-ASK').check()
  // Capability patterns.
  await page.locator('#capabilities').fill('shop*')
  assert.match(await errorOf(page, 'capabilities').innerText(), /not a pattern/)
  await page.locator('#capabilities').fill('shop.*, calendar.find')
  assert.equal(await errorOf(page, 'capabilities').isHidden(), true)
  // Money.
  await page.locator('#per').fill('40.505')
  assert.match(await errorOf(page, 'per').innerText(), /at most two decimals/)
  await page.locator('#per').fill('40.5')
  assert.equal(await errorOf(page, 'per').isHidden(), true)
  await page.locator('#currency').fill('US')
  assert.match(await errorOf(page, 'currency').innerText(), /three-letter/)
  await page.locator('#currency').fill('JPY')
  assert.match(await errorOf(page, 'per').innerText(), /whole JPY only|no minor units/)
  await page.locator('#currency').fill('USD')
  await page.locator('#spend').fill('0')
  assert.match(await errorOf(page, 'spend').innerText(), /more than zero/)
  await page.locator('#spend').fill('')
  // Expiry: custom must be in the future and within the limit; not-before before it.
  await page.locator('#exp-custom').check()
  assert.match(await errorOf(page, 'expiry').innerText(), /type the date and time the grant ends, like 2026-12-24 18:00/)
  await page.locator('#exp-at').fill('2030-02-30 10:00') // the shape, but not a real day
  assert.match(await errorOf(page, 'expiry').innerText(), /type the date and time/)
  await page.locator('#exp-at').fill('2030-01-01 24:00') // not a real time either
  assert.match(await errorOf(page, 'expiry').innerText(), /type the date and time/)
  await page.locator('#exp-at').fill('2001-01-01T10:00')
  assert.match(await errorOf(page, 'expiry').innerText(), /in the past/)
  await page.locator('#exp-at').fill('2199-01-01T10:00')
  assert.match(await errorOf(page, 'expiry').innerText(), /at most 7d 0h from now/)
  await page.locator('#exp-8h').check()
  assert.equal(await errorOf(page, 'expiry').isHidden(), true)
  await page.locator('#nbf').fill('2199-01-01T10:00')
  assert.match(await errorOf(page, 'notBefore').innerText(), /before the end/)
  await page.locator('#nbf').fill('')
  await enabled(page, 'issue')
  assert.deepEqual(page.problems, [])
  await page.close()
})

test('dates: an empty date field shows the shape to type, never a sample date; a typed time reads back in the one shape', async () => {
  const WHEN = /^\d{4}-\d{2}-\d{2}\u00a0\d{2}:\d{2}$/
  const form = await openGrantForm()
  for (const id of ['exp-at', 'nbf']) {
    const f = form.locator(`#${id}`)
    assert.equal(await f.getAttribute('type'), 'text', `${id}: no native date widget (WebKitGTK greys in today's date as if it were a value)`)
    assert.equal(await f.getAttribute('placeholder'), 'YYYY-MM-DD HH:MM', id)
    assert.equal(await f.inputValue(), '', id)
  }
  await form.locator('#agent').fill(AGENT)
  await form.locator('#services').fill('shop.example')
  await form.locator('#exp-custom').check()
  const at = new Date(Date.now() + 2 * 86400 * 1000)
  const pad = (n) => String(n).padStart(2, '0')
  const typed = `${at.getFullYear()}-${pad(at.getMonth() + 1)}-${pad(at.getDate())} 09:30`
  await form.locator('#exp-at').fill(typed)
  await form.waitForFunction(() => /"exp"/.test(document.querySelector('[data-testid="preview"]').textContent))
  const exp = JSON.parse(await text(form, 'caveats-json')).find((c) => 'exp' in c)
  assert.equal(exp?.exp, Math.floor(new Date(at.getFullYear(), at.getMonth(), at.getDate(), 9, 30).getTime() / 1000), 'the local time typed is the time signed')
  assert.deepEqual(form.problems, [])
  await form.close()

  const audit = await open('audit.html', { audit_query: { events: [event({ seq: 1 })], truncated: false, live: [event({ seq: 1, kind: 'grant_issued', preview: 'may do anything', caveat_words: [] })], verify: { rows: 1, ok: true, first_bad_seq: null, problem: null }, now: now() }, agent_pauses: { paused: [], agents: [], now: now() } }, { label: 'main', width: 1100, height: 680 })
  await audit.locator(tid('event-row')).first().waitFor()
  for (const id of ['f-since', 'f-until']) {
    assert.equal(await audit.locator(`#${id}`).getAttribute('type'), 'text', id)
    assert.equal(await audit.locator(`#${id}`).getAttribute('placeholder'), 'YYYY-MM-DD HH:MM', id)
  }
  assert.match(await audit.locator(`${tid('event-row')} td.when`).first().innerText(), /^\d{4}-\d{2}-\d{2}\u00a0\d{2}:\d{2}:\d{2}$/)
  assert.match((await audit.locator(`${tid('live-row')} td`).nth(4).innerText()).split(' (in ')[0], WHEN)
  // Never broken across lines: every time stands in a no-wrap run of its own, ours and custody's alike.
  assert.match(await audit.locator(`${tid('live-row')} td`).nth(4).locator('span.nowrap').innerText(), WHEN)
  const runs = await audit.evaluate(() => [...document.querySelectorAll('span.nowrap')].map((e) => [e.textContent, getComputedStyle(e).whiteSpace]))
  assert.ok(runs.length >= 2, JSON.stringify(runs))
  for (const [t, ws] of runs) {
    assert.match(t, /^\d{4}-\d{2}-\d{2}\u00a0\d{2}:\d{2}(:\d{2})?$/)
    assert.equal(ws, 'nowrap', t)
  }
  // A filter time that is not one is said, not quietly ignored.
  const before = (await calls(audit, 'audit_query')).length
  await audit.locator('#f-since').fill('yesterday')
  await audit.locator(tid('f-apply')).click()
  await audit.locator(`${tid('status')}.msg-error`).waitFor()
  assert.match(await text(audit, 'status'), /“from” is not a date and time: type it like 2026-12-24 18:00/)
  assert.equal((await calls(audit, 'audit_query')).length, before, 'nothing queried with a bad time')
  await audit.locator('#f-since').fill('2026-11-30 06:00')
  await audit.locator(tid('f-apply')).click()
  await audit.waitForFunction((n) => window.__parleyCalls.filter(([c]) => c === 'audit_query').length > n, before)
  assert.equal((await calls(audit, 'audit_query')).at(-1).filter.since, Math.floor(new Date(2026, 10, 30, 6, 0).getTime() / 1000))
  assert.deepEqual(audit.problems, [])
  await audit.close()
})

test('grant form: preview, exact caveats, warnings, and issuing', async () => {
  const page = await openGrantForm()
  // Pick the agent from the known agents: fills the key and its label.
  await page.locator('#known').selectOption(AGENT)
  assert.equal(await page.locator('#agent').inputValue(), AGENT)
  assert.equal(await page.locator('#agent-label').inputValue(), 'shopping bot')
  await page.locator('#services').fill('shop.example')
  await page.locator('#verb-COMMIT').check()
  await page.locator('#per').fill('40')
  const warnings = () => page.locator(`${tid('form-warnings')} li`).allInnerTexts()
  assert.ok((await warnings()).some((w) => /splitting a purchase/.test(w)), 'per without spend is flagged')
  await page.locator('#spend').fill('100')
  assert.ok(!(await warnings()).some((w) => /splitting/.test(w)))
  await page.locator('#exp-8h').check()
  const exp = now() + 8 * 3600
  const json = JSON.parse(await text(page, 'caveats-json'))
  // The grant in words is custody's sentence of exactly the caveats shown
  // (custody/src/review/preview.rs says them; its tests check the words).
  await page.waitForFunction(() => document.querySelector('[data-testid="preview"]').textContent.includes('"per"'))
  assert.equal(await text(page, 'preview'), `“shopping bot” may, says custody, ${JSON.stringify(json)}.`)
  assert.deepEqual(json.slice(0, -1), [
    { svc: ['shop.example'] },
    { verbs: ['ASK', 'INTENT', 'COMMIT'] },
    { per: { max: 4000, currency: 'USD' } },
    { spend: { max: 10000, currency: 'USD' } },
  ])
  assert.ok(Math.abs(json.at(-1).exp - exp) <= 2, 'a grant always expires')
  // COMMIT with no limit at all is flagged.
  await page.locator('#per').fill('')
  await page.locator('#spend').fill('')
  assert.ok((await warnings()).some((w) => /no spending limit and no risk ceiling/.test(w)))
  await page.locator('#risk').selectOption('medium')
  await page.locator('#per').fill('40')
  await page.locator('#spend').fill('100')
  await page.locator('#note').fill('groceries')
  await page.locator(tid('issue')).click()
  await page.locator(tid('token')).waitFor()
  const [issued] = await calls(page, 'grant_issue')
  assert.equal(issued.agent, AGENT)
  assert.equal(issued.principal, PRINCIPAL)
  assert.equal(issued.request, null)
  assert.equal(issued.note, 'groceries')
  assert.deepEqual(issued.caveats.slice(0, -1), [
    { svc: ['shop.example'] },
    { verbs: ['ASK', 'INTENT', 'COMMIT'] },
    { per: { max: 4000, currency: 'USD' } },
    { spend: { max: 10000, currency: 'USD' } },
    { risk: 'medium' },
  ])
  assert.equal(await page.locator(tid('token')).inputValue(), 'pg1.TOKEN')
  assert.equal(await page.locator(tid('issue')).isDisabled(), true, 'issued once')
  assert.deepEqual(await calls(page, 'agent_label_set'), [], 'the label did not change')
  assert.deepEqual(page.problems, [])
  await page.close()
})

test('grant form: the grant in words is custody\'s sentence of the current plan, never an earlier one', async () => {
  const page = await openGrantForm(grantFixtures({ grant_preview: { __echo: true, __delay: 400, value: preview() } }))
  assert.equal(await text(page, 'preview'), '', 'nothing said before the form makes a grant')
  await page.locator('#agent').fill(AGENT)
  await page.locator('#services').fill('shop.example')
  await page.locator('#exp-1h').check()
  await page.waitForFunction(() => document.querySelector('[data-testid="preview"]').textContent.includes('shop.example'))
  // A change: the old sentence goes at once, custody's new one comes when it answers.
  await page.locator('#services').fill('shop.example, mail.example')
  assert.equal(await text(page, 'preview'), '', 'the sentence of the earlier plan is not shown')
  assert.match(await text(page, 'preview-state'), /Checking with custody/)
  await page.waitForFunction(() => document.querySelector('[data-testid="preview"]').textContent.includes('mail.example'))
  const json = JSON.parse(await text(page, 'caveats-json'))
  assert.equal(await text(page, 'preview'), `“shopping bot” may, says custody, ${JSON.stringify(json)}.`)
  assert.deepEqual(page.problems, [])
  await page.close()
})

test('grant form: YEA measured limits become each/total caveats, in words, never mixed with per/spend', async () => {
  const page = await openGrantForm()
  await page.locator('#agent').fill(AGENT)
  await page.locator('#services').fill('shop.example')
  await page.locator('#verb-COMMIT').check()
  const row = async (i, kind, amount, unit, of) => {
    if ((await page.locator(tid('measure')).count()) <= i) await page.locator(tid('measure-add')).click()
    const r = page.locator(tid('measure')).nth(i)
    await r.locator(tid('measure-kind')).selectOption(kind)
    await r.locator(tid('measure-amount')).fill(amount)
    await r.locator(tid('measure-unit')).fill(unit)
    await r.locator(tid('measure-of')).fill(of)
  }
  await row(0, 'each', '40', 'USD', 'spend')
  await row(1, 'total', '3', '', 'emails')
  await row(2, 'total', '1.5', 'GB', 'storage')
  const json = JSON.parse(await text(page, 'caveats-json'))
  assert.deepEqual(json.filter((c) => 'each' in c || 'total' in c), [
    { each: { of: 'spend', max: 4000, scale: 2, unit: 'USD' } },
    { total: { of: 'emails', max: 3 } },
    { total: { of: 'storage', max: 15, scale: 1, unit: 'GB' } },
  ])
  await page.waitForFunction(() => document.querySelector('[data-testid="preview"]').textContent.includes('"storage"'))
  assert.equal(await text(page, 'preview'), `“shopping bot” may, says custody, ${JSON.stringify(json)}.`)
  assert.ok(!(await page.locator(`${tid('form-warnings')} li`).allInnerTexts()).some((w) => /no spending limit/.test(w)), 'a measured limit is a limit')
  // Refused: a decimal count, spend without a currency, a bad measure name, mixing with Parley's fields.
  await row(1, 'total', '2.5', '', 'emails')
  assert.match(await errorOf(page, 'measures').innerText(), /a count is a whole number/)
  await row(1, 'total', '3', '', 'emails')
  await row(0, 'each', '40', '', 'spend')
  assert.match(await errorOf(page, 'measures').innerText(), /spend is money/)
  await row(0, 'each', '40', 'USD', 'Spend!')
  assert.match(await errorOf(page, 'measures').innerText(), /not a measure name/)
  await row(0, 'each', '40', 'USD', 'spend')
  assert.equal(await errorOf(page, 'measures').isHidden(), true)
  await page.locator('#per').fill('40')
  assert.match(await errorOf(page, 'measures').innerText(), /not both/)
  assert.equal(await page.locator(tid('issue')).isDisabled(), true)
  await page.locator('#per').fill('')
  await page.locator(tid('measure')).nth(2).locator(tid('measure-remove')).click()
  await enabled(page, 'issue')
  await page.locator(tid('issue')).click()
  await page.locator(tid('token')).waitFor()
  const [issued] = await calls(page, 'grant_issue')
  assert.deepEqual(issued.caveats.filter((c) => 'each' in c || 'total' in c), [
    { each: { of: 'spend', max: 4000, scale: 2, unit: 'USD' } },
    { total: { of: 'emails', max: 3 } },
  ])
  assert.deepEqual(page.problems, [])
  await page.close()
})

test('grant form: a YEA grant request fills its measured limits, and one it cannot hold is kept verbatim', async () => {
  const odd = { total: { of: 'spend', max: 5, scale: 3, unit: 'USD' } }
  const req = grantRequest({ caveats: [{ svc: ['shop.example'] }, { verbs: ['ASK', 'COMMIT'] }, { each: { of: 'spend', max: 3000, scale: 2, unit: 'USD' } }, { total: { of: 'emails', max: 3 } }, odd, { exp: now() + 3600 }] })
  const page = await open('grant.html#request=q7', grantFixtures({ grant_context: { ...grantFixtures().grant_context, request: req } }), { label: 'review-q7', width: 760, height: 1000 })
  await page.locator(tid('request-banner')).waitFor()
  const rows = await page.locator(tid('measure')).evaluateAll((els) => els.map((e) => [...e.querySelectorAll('select, input')].map((i) => i.value)))
  assert.deepEqual(rows, [['each', '30.00', 'USD', 'spend'], ['total', '3', '', 'emails']])
  const json = JSON.parse(await text(page, 'caveats-json'))
  assert.deepEqual(json.filter((c) => 'each' in c || 'total' in c), [
    { each: { of: 'spend', max: 3000, scale: 2, unit: 'USD' } },
    { total: { of: 'emails', max: 3 } },
    odd,
  ])
  assert.deepEqual(page.problems, [])
  await page.close()
})

test('grant form: answering a request keeps its agent and every requested condition', async () => {
  const extraCaveat = { only: HASH }
  const req = grantRequest({ caveats: [{ svc: ['shop.example'] }, { verbs: ['ASK', 'COMMIT'] }, { per: { max: 4000, currency: 'USD' } }, extraCaveat, { exp: now() + 3600 }] })
  const page = await open('grant.html#request=q7', grantFixtures({
    grant_context: { ...grantFixtures().grant_context, request: req },
    grant_issue: { sent_to_agent: true, token: null, caveats: [], caveat_words: ['x'], preview: 'may …', warnings: [] },
  }), { label: 'review-q7', width: 760, height: 1000 })
  await page.locator(tid('request-banner')).waitFor()
  assert.equal(await page.locator('#agent').inputValue(), AGENT)
  assert.equal(await page.locator('#agent').getAttribute('readonly'), '')
  assert.equal(await page.locator('#services').inputValue(), 'shop.example')
  assert.equal(await page.locator('#verb-COMMIT').isChecked(), true)
  assert.equal(await page.locator('#verb-INTENT').isChecked(), false)
  assert.equal(await page.locator('#per').inputValue(), '40.00')
  assert.equal(await page.locator('#exp-custom').isChecked(), true)
  assert.match(await text(page, 'request-banner'), /weekly groceries/)
  const json = JSON.parse(await text(page, 'caveats-json'))
  assert.deepEqual(json.find((c) => 'only' in c), extraCaveat, 'an unknown condition is kept verbatim')
  await page.locator('#spend').fill('100')
  await page.locator(tid('issue')).click()
  await page.locator(tid('result')).waitFor()
  const [issued] = await calls(page, 'grant_issue')
  assert.equal(issued.request, 'q7')
  assert.ok(issued.caveats.some((c) => c.spend?.max === 10000))
  assert.match(await text(page, 'status'), /sent to the waiting agent/)
  await page.close()
})

test('grant form: a request decided elsewhere cannot be issued from the form any more', async () => {
  const page = await open('grant.html#request=q7', grantFixtures({ grant_context: { ...grantFixtures().grant_context, request: grantRequest() } }), { label: 'review-q7', width: 760, height: 1000 })
  await page.locator(tid('request-banner')).waitFor()
  await page.locator('#spend').fill('100')
  await enabled(page, 'issue')
  await page.evaluate(() => window.__parleyEmit('pending-withdrawn', 'q7'))
  await page.locator(`${tid('status')}.msg-warn`).waitFor()
  assert.match(await text(page, 'status'), /no longer waiting/)
  assert.equal(await page.locator(tid('issue')).isDisabled(), true)
  assert.deepEqual(await calls(page, 'grant_issue'), [])
  await page.close()
})

test('grant form: a widening edit is shown, must be confirmed, and is sent back word for word', async () => {
  const req = grantRequest({ caveats: [{ svc: ['shop.example'] }, { verbs: ['ASK', 'INTENT'] }, { per: { max: 4000, currency: 'USD' } }, { exp: now() + 3600 }] })
  const page = await open('grant.html#request=q7', grantFixtures({
    grant_context: { ...grantFixtures().grant_context, request: req },
    grant_preview: { __echo: true, value: preview({ principal_label: 'household' }) },
    grant_issue: { sent_to_agent: true, token: null, caveats: [], caveat_words: ['x'], preview: 'may …', warnings: [] },
  }), { label: 'review-q7', width: 760, height: 1000 })
  await page.locator(tid('request-banner')).waitFor()
  await enabled(page, 'issue')
  assert.equal(await page.locator(tid('widenings')).isHidden(), true, 'as requested: nothing widens')
  assert.equal(await text(page, 'signing-principal'), 'Issue signs it with your key “household” ed25519:iojj3XQJ8Z…')
  // The human adds COMMIT: custody names the widening.
  await page.evaluate(() => {
    window.__PARLEY_FIXTURES__.grant_preview = { __echo: true, value: { ...window.__PARLEY_FIXTURES__.grant_preview.value, widenings: ['adds COMMIT', 'raises the per-action cap from 40.00 USD to 80.00 USD'] } }
  })
  await page.locator('#verb-COMMIT').check()
  await page.locator('#per').fill('80')
  await page.locator(tid('widenings')).waitFor()
  assert.deepEqual(await page.locator(`${tid('widening-list')} li`).allInnerTexts(), ['adds COMMIT', 'raises the per-action cap from 40.00 USD to 80.00 USD'])
  await page.waitForTimeout(APPROVE_DELAY_MS + 200)
  assert.equal(await page.locator(tid('issue')).isDisabled(), true, 'not before the widening is confirmed')
  assert.match(await text(page, 'issue-hint'), /Confirm the widening/)
  await page.locator(tid('confirm-widening')).check()
  await enabled(page, 'issue')
  // Keys do not issue.
  await page.evaluate(() => document.querySelector('[data-testid="issue"]').focus())
  await page.keyboard.press('Enter')
  await page.keyboard.press('Space')
  await page.waitForTimeout(200)
  assert.deepEqual(await calls(page, 'grant_issue'), [])
  await page.locator(tid('issue')).click()
  await page.locator(tid('result')).waitFor()
  const [issued] = await calls(page, 'grant_issue')
  assert.deepEqual(issued.widenings, ['adds COMMIT', 'raises the per-action cap from 40.00 USD to 80.00 USD'])
  assert.deepEqual(issued.shown, issued.caveats, 'what was shown is sent back')
  assert.equal(issued.gesture, 'click')
  assert.ok(issued.caveats.some((c) => c.per?.max === 8000))
  const previews = await calls(page, 'grant_preview')
  assert.deepEqual(previews.at(-1).caveats, issued.caveats, 'the caveats issued are the last ones previewed')
  assert.equal(previews.at(-1).request, 'q7')
  await page.close()
})

test('grant form: filling it from a request never widens it (empty lists, spaces in ids, lower-case currency)', async () => {
  const exp = now() + 3600
  const odd = [{ svc: ['shop example'] }, { can: [] }, { per: { max: 4000, currency: 'usd' } }]
  const req = grantRequest({ caveats: [...odd, { verbs: ['ASK'] }, { exp }] })
  const page = await open('grant.html#request=q7', grantFixtures({ grant_context: { ...grantFixtures().grant_context, request: req } }), { label: 'review-q7', width: 760, height: 1000 })
  await page.locator(tid('request-banner')).waitFor()
  assert.equal(await page.locator('#services').inputValue(), '', 'a service id with a space is not split into two')
  assert.equal(await page.locator('#capabilities').inputValue(), '')
  assert.equal(await page.locator('#per').inputValue(), '', 'a lower-case currency is not made upper case')
  assert.match(await text(page, 'request-banner'), /3 requested condition\(s\) have no field here/)
  const json = JSON.parse(await text(page, 'caveats-json'))
  for (const c of odd) assert.ok(json.some((x) => JSON.stringify(x) === JSON.stringify(c)), `${JSON.stringify(c)} kept verbatim in ${JSON.stringify(json)}`)
  assert.ok(!json.some((x) => x.svc && x.svc.length === 2))
  await enabled(page, 'issue')
  // Typed by the human: one id with a space is an error, not two services; usd is not USD.
  await page.locator('#services').fill('shop example')
  assert.match(await errorOf(page, 'services').innerText(), /no spaces/)
  await page.locator('#services').fill('a.example, b.example')
  assert.equal(await errorOf(page, 'services').isHidden(), true)
  await page.locator('#currency').fill('usd')
  await page.locator('#spend').fill('10')
  assert.match(await errorOf(page, 'currency').innerText(), /in capitals/)
  await page.close()
})

test('home: a newcomer is offered to create a principal key', async () => {
  const page = await open('index.html', {
    status: status({ keys: [] }),
    pending_list: [],
    key_create: { public: PRINCIPAL, short: 'ed25519:iojj3XQJ8Z…', label: 'me', created_at: now(), source: 'created', status: 'present' },
  })
  await page.locator(tid('welcome')).waitFor()
  assert.match(await text(page, 'welcome'), /First, your principal key/)
  assert.equal(await page.locator(tid('pending-section')).isHidden(), true, 'no empty "Waiting for you" on first run')
  await page.locator(tid('key-label')).fill('me')
  await page.evaluate(() => (window.__PARLEY_FIXTURES__.status = { ...window.__PARLEY_FIXTURES__.status, keys: [window.__PARLEY_FIXTURES__.key_create] }))
  await page.locator(tid('create-key')).click()
  await page.locator(tid('principal-key')).waitFor()
  assert.deepEqual(await calls(page, 'key_create'), [{ label: 'me' }])
  assert.equal(await text(page, 'principal-key'), PRINCIPAL)
  assert.equal(await page.locator(tid('welcome')).isHidden(), true)
  // Nothing waits: still no empty "Waiting for you" card.
  assert.equal(await page.locator(tid('pending-section')).isHidden(), true)
  assert.deepEqual(page.problems, [])
  await page.close()
})

test('home: start at login is offered once, after the key exists, and either answer is sent', async () => {
  const page = await open('index.html', {
    status: status({ autostart: { enabled: false, offered: false, entry: '/home/me/.config/autostart/org.parley.custody.desktop', error: null } }),
    pending_list: [],
    autostart_set: { enabled: false, offered: true, entry: '', error: null },
  })
  await page.locator(tid('autostart-offer')).waitFor()
  assert.match(await text(page, 'autostart-offer'), /Start Parley Custody when you log in\?.*hidden in the tray/)
  await page.evaluate(() => (window.__PARLEY_FIXTURES__.status = { ...window.__PARLEY_FIXTURES__.status, autostart: { enabled: false, offered: true, entry: '', error: null } }))
  await page.locator(tid('autostart-no')).click()
  await page.locator(tid('autostart-offer')).waitFor({ state: 'hidden' })
  assert.deepEqual(await calls(page, 'autostart_set'), [{ enabled: false }])
  await page.close()
  // No offer before there is a key (the welcome comes first), none once answered.
  const fresh = await open('index.html', {
    status: status({ keys: [], autostart: { enabled: false, offered: false, entry: '', error: null } }),
    pending_list: [],
  })
  await fresh.locator(tid('welcome')).waitFor()
  assert.equal(await fresh.locator(tid('autostart-offer')).isHidden(), true)
  assert.deepEqual(fresh.problems, [])
  await fresh.close()
})

test('home: pending requests as text, with their review buttons; states are said', async () => {
  const hostile = consent({ review: { service: '<b>evil</b>\u202e', agent: { key: AGENT, short: 'ed25519:gTl3Dqh9F1…', label: 'bot', known: true } } })
  const page = await open('index.html', {
    status: status({ notifications: { available: false, message: 'Desktop notifications are not available (no daemon).' }, tray: { available: false, message: 'No tray icon: this desktop has no tray host.' }, restart_needed: ['queue_size'] }),
    pending_list: [hostile],
    open_window: null,
  })
  await page.locator(tid('pending-item')).waitFor()
  assert.match(await text(page, 'pending-item'), /^“bot” asks you to approve 71\.36 USD at <b>evil<\/b>\\u\{202e\}/)
  assert.equal(await page.locator('main b').count(), 0)
  await page.locator(tid('review-q1')).click()
  assert.deepEqual(await calls(page, 'open_window'), [{ kind: 'review', id: 'q1', agent: null }])
  assert.match(await text(page, 'no-notifications'), /not available/)
  assert.match(await text(page, 'no-tray'), /no tray host/)
  assert.match(await text(page, 'restart-needed'), /queue_size/)
  await page.evaluate(() => (window.__PARLEY_FIXTURES__.pending_list = []))
  await page.evaluate(() => window.__parleyEmit('pending-changed'))
  await page.locator(tid('pending-section')).waitFor({ state: 'hidden' })
  await page.close()
})

test('audit: events newest first, live grants, chain state, export', async () => {
  const view = {
    events: [
      event({ seq: 3, kind: 'grant_issued', cost: null, capability: null, hash: null, risk: null, undo: null, caveats: '[{"svc":["shop.example"]}]', caveat_words: ['only at the services "shop.example"'], preview: 'may do anything at shop.example, until …', reason: 'issued from the grant form' }),
      event({ seq: 2, kind: 'consent_denied', reason: 'too <b>expensive</b>', peer_exe: '/usr/bin/py\\u{202e}nohtyp' }),
      event({ seq: 1 }),
    ],
    truncated: false,
    live: [event({ seq: 1 }), event({ seq: 3, kind: 'grant_issued', preview: 'may do anything at shop.example, until …', caveat_words: ['only at the services "shop.example"'] })],
    verify: { rows: 3, ok: true, first_bad_seq: null, problem: null },
    now: now(),
  }
  const page = await open('audit.html', { audit_query: view, audit_export: { path: '/home/me/Downloads/parley-audit.jsonl', rows: 3 }, agent_pauses: { paused: [], agents: [], now: now() } }, { label: 'main', width: 1200, height: 900 })
  await page.locator(tid('event-row')).first().waitFor()
  assert.deepEqual(await page.locator(tid('event-row')).evaluateAll((rows) => rows.map((r) => r.dataset.kind)), ['grant_issued', 'consent_denied', 'consent_approved'])
  assert.match(await text(page, 'chain'), /Chain verified: all 3 events are intact/)
  assert.equal(await page.locator(tid('live-row')).count(), 1, 'the grant is live')
  assert.match(await page.locator(tid('used-row')).first().innerText(), /one shop\.order for 71\.36 USD/)
  assert.match(await page.locator(tid('event-row')).nth(1).innerText(), /too <b>expensive<\/b>/)
  assert.equal(await page.locator('main b').count(), 0)
  // Filters go to the backend as a query.
  await page.locator('#f-kind').selectOption('consent_denied')
  await page.waitForFunction(() => window.__parleyCalls.filter(([c]) => c === 'audit_query').length >= 2)
  const qs = await calls(page, 'audit_query')
  assert.deepEqual(qs.at(-1).filter.kinds, ['consent_denied'])
  await page.locator('#f-service').fill('shop.example')
  await page.locator(tid('f-apply')).click()
  await page.waitForFunction(() => window.__parleyCalls.filter(([c]) => c === 'audit_query').length >= 3)
  assert.equal((await calls(page, 'audit_query')).at(-1).filter.service, 'shop.example')
  await page.locator(tid('export-jsonl')).click()
  await page.locator(`${tid('status')}.msg-ok`).waitFor()
  assert.match(await text(page, 'status'), /Exported 3 events to \/home\/me\/Downloads\/parley-audit\.jsonl/)
  assert.equal((await calls(page, 'audit_export'))[0].format, 'jsonl')
  // A broken chain is said loudly.
  await page.evaluate(() => (window.__PARLEY_FIXTURES__.audit_query = { ...window.__PARLEY_FIXTURES__.audit_query, verify: { rows: 3, ok: false, first_bad_seq: 2, problem: 'row 2 was changed' } }))
  await page.evaluate(() => window.__parleyEmit('pending-changed'))
  await page.waitForFunction(() => document.querySelector('[data-testid="chain"]').dataset.ok === 'false')
  assert.match(await text(page, 'chain'), /does NOT verify: row 2 was changed \(first bad event #2\)/)
  assert.deepEqual(page.problems, [])
  await page.close()
})

test('review: "Deny and pause this agent for 1 hour" sits next to Deny, is never the default, and never approves', async () => {
  const message = 'Denied, and this agent is paused for 1h: its requests are refused without being shown until 2026-12-02 04:00:00 UTC.'
  const page = await open('review.html#q1', reviewFixtures(consent(), { review_deny_and_pause: { outcome: 'denied', message } }), { label: 'review-q1' })
  await page.locator(tid('approve')).waitFor()
  const button = page.locator(tid('deny-pause'))
  assert.equal(await button.innerText(), 'Deny and pause agent 1 h')
  // Right after Deny, before Approve; Deny keeps the focus, and Enter denies without pausing.
  const order = await page.evaluate(() => [...document.querySelectorAll('.actions button')].map((b) => b.dataset.testid))
  assert.deepEqual(order.slice(0, 2), ['deny', 'deny-pause'])
  assert.ok(order.indexOf('approve') > 1, order.join(','))
  assert.equal(await page.evaluate(() => document.activeElement?.dataset.testid), 'deny')
  assert.equal(await button.isDisabled(), false, 'usable at once: denying needs no delay')
  await button.click()
  await page.locator(`${tid('status')}:not([hidden])`).waitFor()
  assert.deepEqual(await calls(page, 'review_deny_and_pause'), [{ id: 'q1' }])
  assert.deepEqual(await calls(page, 'review_decide'), [], 'no approval, no second decision')
  assert.equal(await text(page, 'status'), message)
  // Decided: nothing else can be pressed, and the window closes itself.
  assert.equal(await button.isDisabled(), true)
  assert.equal(await page.locator(tid('deny')).isDisabled(), true)
  assert.equal(await page.locator(tid('approve')).isDisabled(), true)
  await page.locator(tid('deny-pause')).click({ force: true })
  assert.equal((await calls(page, 'review_deny_and_pause')).length, 1, 'once')
  await page.waitForFunction(() => window.__parleyCalls.some(([c]) => c === 'window_close'), null, { timeout: 6000 })
  assert.deepEqual(page.problems, [])
  await page.close()
})

test('review: alike requests waiting are listed in the review and denied together, never approved together', async () => {
  const others = [
    consent({ id: 'q2', review: { cost: '64.10 USD', their_words: 'Order 2 items' } }),
    consent({ id: 'q3', review: { cost: '80.00 USD', their_words: 'Order <b>4</b> items\u202e' } }),
  ]
  const message = 'Denied 3 requests: nothing was signed; each agent was told.'
  const page = await open('review.html#q1', reviewFixtures(consent(), { review_alike: others, review_deny_alike: { outcome: 'denied', message } }), { label: 'review-q1' })
  await page.locator(`${tid('alike')}:not([hidden])`).waitFor()
  assert.match(await page.locator(`${tid('alike')} h2`).innerText(), /^2 more requests like this one from this agent are waiting/)
  const items = await page.locator(tid('alike-item')).allInnerTexts()
  assert.equal(items.length, 2)
  assert.match(items[0], /^64\.10 USD — Order 2 items/)
  assert.match(items[1], /Order <b>4<\/b> items\\u\{202e\}/, 'their words are text, made visible')
  assert.equal(await text(page, 'deny-alike'), 'Deny this and the 2 alike')
  await page.locator('#reason').fill('too many orders')
  await page.locator(tid('deny-alike')).click()
  await page.locator(`${tid('status')}:not([hidden])`).waitFor()
  assert.equal(await text(page, 'status'), message)
  assert.deepEqual(await calls(page, 'review_deny_alike'), [{ id: 'q1', reason: 'too many orders' }])
  assert.deepEqual(await calls(page, 'review_decide'), [], 'nothing approved')
  assert.equal(await page.locator(tid('approve')).isDisabled(), true)
  assert.deepEqual(page.problems, [])
  await page.close()
})

test('review: with nothing alike waiting, the list is not shown', async () => {
  const page = await open('review.html#q1', reviewFixtures(consent()), { label: 'review-q1' })
  await page.locator(tid('approve')).waitFor()
  await page.waitForFunction(() => window.__parleyCalls.some(([c]) => c === 'review_alike'))
  assert.equal(await page.locator(tid('alike')).isVisible(), false)
  assert.deepEqual(page.problems, [])
  await page.close()
})

test('review: deny and pause on a request decided elsewhere says so; other errors leave it open', async () => {
  const page = await open('review.html#q1', reviewFixtures(consent(), { review_deny_and_pause: { __error: { code: 'refused', message: 'the audit log could not record the pause, so it is not in force: disk full' } } }), { label: 'review-q1' })
  await page.locator(tid('approve')).waitFor()
  await page.locator(tid('deny-pause')).click()
  await page.locator(`${tid('status')}.msg-error`).waitFor()
  assert.match(await text(page, 'status'), /not in force: disk full/)
  assert.equal(await page.locator(tid('deny')).isDisabled(), false, 'still open: the human can deny another way')
  await page.evaluate(() => (window.__PARLEY_FIXTURES__.review_deny_and_pause = { __error: { code: 'gone', message: 'that request is no longer waiting (decided, expired or withdrawn)' } }))
  await page.locator(tid('deny-pause')).click()
  await page.locator(`${tid('status')}.msg-warn`).waitFor()
  assert.equal(await page.locator(tid('deny-pause')).isDisabled(), true)
  await page.close()
})

test('audit: at its default size (1100×680) the tables fit, nothing is cut, and keys never break mid-word', async () => {
  const long = '/home/me/.local/share/some/deep/venv/bin/python3.11-with-a-long-name'
  const view = {
    events: Array.from({ length: 6 }, (_, i) => event({ seq: 6 - i, peer_exe: long, reason: 'a reason that is a whole sentence long, as people write them' })),
    truncated: false,
    live: [event({ seq: 1 }), event({ seq: 3, kind: 'grant_issued', preview: 'may ask for offers, state intents and commit at shop.example, up to 40.00 USD each, 100.00 USD in total, until 18:00', caveat_words: ['only at the services "shop.example"'] })],
    verify: { rows: 6, ok: true, first_bad_seq: null, problem: null },
    now: now(),
  }
  const page = await open('audit.html', { audit_query: view, audit_export: { path: '/tmp/x', rows: 6 }, agent_pauses: { paused: [], agents: [], now: now() } }, { label: 'main', width: 1100, height: 680 })
  await page.locator(tid('event-row')).first().waitFor()
  const overflow = await page.evaluate(() => [...document.querySelectorAll('.table-wrap')].map((w) => w.scrollWidth - w.clientWidth))
  assert.ok(overflow.every((d) => d <= 1), `no table is wider than its box: ${overflow}`)
  // A one-shot consent is listed as given for its one use, not live.
  assert.equal(await page.locator(tid('one-shot')).count(), 1)
  assert.match(await text(page, 'live-note'), /one COMMIT of one proposal/)
  const broken = await page.evaluate(() => [...document.querySelectorAll('.table code')].filter((c) => c.getClientRects().length > 1).map((c) => c.textContent))
  assert.deepEqual(broken, [], 'a key or hash is never broken across lines')
  const askedBy = await page.locator('th', { hasText: 'Asked by' }).boundingBox()
  assert.ok(askedBy && askedBy.x + askedBy.width <= 1100, 'the Asked by column is on screen')
  assert.deepEqual(page.problems, [])
  await page.close()
})

test('audit: paused agents with Resume, and a Pause action per known agent, all display-safe', async () => {
  const t = now()
  const OTHER = 'ed25519:B2xCwJqg0k9tP2mE3JzAh5vYwZ1Qh8d3kUqgQ7yTr0A'
  const THIRD = 'ed25519:Zx3lY0aR1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8'
  const pausedView = (paused) => ({
    paused,
    agents: [
      { key: AGENT, short: 'ed25519:gTl3Dqh9F1…', label: 'shop\u202eping bot', last_seen: t - 60, waiting: false },
      { key: OTHER, short: 'ed25519:B2xCwJqg0k…', label: null, last_seen: null, waiting: true },
      { key: THIRD, short: 'ed25519:Zx3lY0aR1b…', label: null, last_seen: t - 9000, waiting: false },
    ],
    now: t,
  })
  const first = pausedView([{ agent: AGENT, short: 'ed25519:gTl3Dqh9F1…', label: 'shop\u202eping bot', until: t + 3600, reason: 'denied and paused for <b>1h</b>', at: t }])
  const afterResume = pausedView([])
  const afterPause = pausedView([{ agent: OTHER, short: 'ed25519:B2xCwJqg0k…', label: null, until: null, reason: 'paused by the human in the app', at: t }])
  const page = await open('audit.html', { audit_query: { events: [], truncated: false, live: [], verify: { rows: 0, ok: true, first_bad_seq: null, problem: null }, now: t }, agent_pauses: first, agent_resume: afterResume, agent_pause: afterPause }, { label: 'main', width: 1200, height: 900 })
  await page.locator(tid('paused-row')).waitFor()
  const row = page.locator(tid('paused-row'))
  assert.equal(await row.count(), 1)
  const rowText = await row.innerText()
  assert.match(rowText, /shop\\u\{202e\}ping bot ed25519:gTl3Dqh9F1…/, 'the label is the name, made visible; the key a detail after it')
  assert.match(rowText, /in 1h|in 59m/)
  assert.match(rowText, /denied and paused for <b>1h<\/b>/)
  assert.equal(await page.locator('main b').count(), 0)
  // The paused agent is not offered to pause again; the others are.
  assert.deepEqual(await page.locator(tid('pause-agent')).evaluateAll((li) => li.map((l) => l.dataset.agent)), [OTHER, THIRD])
  assert.match(await page.locator(tid('pause-agent')).first().textContent(), /asking now/)
  await row.locator(tid('resume')).click()
  await page.locator(tid('no-paused')).waitFor()
  assert.deepEqual(await calls(page, 'agent_resume'), [{ agent: AGENT }])
  assert.match(await text(page, 'pause-status'), /Resumed/)
  assert.equal(await page.locator(tid('pause-agent')).count(), 3, 'resumed: it can be paused again')
  // Pause until resumed, then for an hour: each goes to the backend as asked.
  await page.locator(tid('pause-agents')).locator('summary').click()
  await page.locator(`${tid('pause-agent')}[data-agent="${OTHER}"] ${tid('pause')}`).click()
  await page.locator(tid('paused-row')).waitFor()
  assert.deepEqual(await calls(page, 'agent_pause'), [{ agent: OTHER, secs: null }])
  assert.match(await page.locator(tid('paused-row')).innerText(), /until you resume it/)
  await page.locator(`${tid('pause-agent')}[data-agent="${THIRD}"] ${tid('pause-1h')}`).click()
  await page.waitForFunction(() => window.__parleyCalls.filter(([c]) => c === 'agent_pause').length === 2)
  assert.deepEqual((await calls(page, 'agent_pause'))[1], { agent: THIRD, secs: 3600 })
  // A refusal is said, not swallowed.
  await page.evaluate(() => (window.__PARLEY_FIXTURES__.agent_resume = { __error: 'That agent is not paused (its pause may have ended already).' }))
  await page.locator(tid('resume')).click()
  await page.locator(`${tid('pause-status')}.msg-error`).waitFor()
  assert.match(await text(page, 'pause-status'), /not paused/)
  // A pause made elsewhere (the tray, a review) shows up at once.
  await page.evaluate((v) => (window.__PARLEY_FIXTURES__.agent_pauses = v), first)
  await page.evaluate(() => window.__parleyEmit('pauses-changed'))
  await page.waitForFunction(() => document.querySelector('[data-testid="paused-row"]')?.dataset.agent?.startsWith('ed25519:gTl3'))
  assert.deepEqual(page.problems, [])
  await page.close()
})

test('settings: keys, import with shred offer, limits that need a restart', async () => {
  const sv = settingsView({ agent_labels: { [AGENT]: 'shopping bot' } })
  const page = await open('settings.html', {
    keys_list: { store: 'the OS keychain', keys: status().keys },
    settings_get: sv,
    settings_save: { ...sv, restart_needed: ['agents_group', 'queue_size'] },
    settings_loosenings: [{ field: 'agents_group', words: 'let the agents of group "parley-agents" connect' }],
    key_import: { ...status().keys[0], public: AGENT, label: 'imported', source: 'imported' },
    key_shred: null,
    agent_label_set: null,
    agent_pauses: { paused: [], agents: [{ key: AGENT, short: 'ed25519:gTl3Dqh9F1…', phrase: 'cactus orbit lemon frost', label: 'shopping bot', last_seen: null, waiting: false }], now: 0 },
    autostart_set: { ...sv.autostart, enabled: true },
    agent_user_plan: { user: 'bot', group: 'parley-agents', steps: ['1. create the group parley-agents', '2. add the user bot to the group parley-agents'], socket: '/srv/parley-custody/me/custody.sock' },
    agent_user_apply: { ...sv, settings: { ...sv.settings, agents_group: 'parley-agents', socket_path: '/srv/parley-custody/me/custody.sock' }, restart_needed: ['agents_group', 'socket_path'] },
  }, { label: 'main', width: 800, height: 1000 })
  await page.locator(tid('pubkey')).waitFor()
  assert.equal(await text(page, 'pubkey'), PRINCIPAL)
  await page.locator(tid('import')).click()
  await page.locator(tid('shred-offer')).waitFor()
  assert.deepEqual(await calls(page, 'key_import'), [{ path: '~/.parley/principal.key', label: 'imported' }])
  await page.locator(tid('shred')).click()
  await page.waitForFunction(() => /overwritten and deleted/.test(document.querySelector('[data-testid="shred-offer"]').textContent))
  // Before Save: custody says which changes loosen it, so saving asks for the password.
  assert.equal(await page.locator(tid('s-asks')).isVisible(), false)
  assert.match(await text(page, 'keys-asks'), /Deleting or importing a key.*asks for your password/)
  await page.locator(tid('s-group')).fill('parley-agents')
  await page.locator(tid('s-asks')).waitFor()
  assert.match(await text(page, 's-asks'), /^Saving asks for your password \(OS authentication\) first[^]*let the agents of group "parley-agents" connect$/)
  assert.equal((await calls(page, 'settings_loosenings')).at(-1).settings.agents_group, 'parley-agents')
  await page.locator(tid('s-queue')).fill('10')
  // Durations are shown as the hints write them: 7 days is 7d, not 1w.
  assert.equal(await page.locator(tid('s-lifetime')).inputValue(), '7d')
  assert.equal(await page.locator(tid('s-horizon')).inputValue(), '1d')
  await page.locator(tid('s-horizon')).fill('12h')
  // OS authentication: the safe default is shown; "above an amount" needs an amount.
  assert.equal(await page.locator(tid('s-stepup')).inputValue(), 'committing')
  assert.equal(await page.locator(tid('s-stepup-amount')).isVisible(), false)
  await page.locator(tid('s-stepup')).selectOption('above')
  await page.locator(tid('s-stepup-amount')).fill('fifty')
  await page.locator(tid('s-save')).click()
  await page.waitForFunction(() => /write it like 50.00 USD/.test(document.querySelector('[data-testid="s-status"]').textContent))
  assert.deepEqual(await calls(page, 'settings_save'), [], 'nothing saved while the amount is not one')
  await page.locator(tid('s-stepup-amount')).fill('50.00 usd')
  await page.locator(tid('s-save')).click()
  await page.locator(tid('s-restart')).waitFor()
  const [saved] = await calls(page, 'settings_save')
  assert.deepEqual(saved.settings.step_up, { rule: 'above', amount: 5000, currency: 'USD' })
  assert.equal(saved.settings.agents_group, 'parley-agents')
  assert.equal(saved.settings.queue_size, 10)
  assert.equal(saved.settings.max_consent_horizon_secs, 43200)
  assert.match(await text(page, 's-status'), /after a restart of the socket: agents group, queue size/)
  // A change the OS did not authenticate is refused, and the page says so plainly.
  const refusal = 'To turn OS authentication off for approvals, custody needs OS authentication, which is not available here (no authentication agent answered); nothing changed. To make this change without it, quit Parley Custody and edit /home/me/.local/share/parley-custody/settings.json as yourself.'
  await page.evaluate((m) => (window.__PARLEY_FIXTURES__.settings_save = { __error: { code: 'not_authenticated', message: m } }), refusal)
  await page.locator(tid('s-stepup')).selectOption('never')
  await page.locator(tid('s-save')).click()
  await page.waitForFunction(() => /^Not saved: /.test(document.querySelector('[data-testid="s-status"]').textContent))
  assert.equal(await text(page, 's-status'), `Not saved: ${refusal}`)
  assert.match(await page.locator(tid('s-status')).getAttribute('class'), /msg-error/)
  // Known agents: their words, and names saved by the one Save button (only changed ones are sent).
  assert.equal(await text(page, 's-agent-phrase'), 'cactus orbit lemon frost')
  assert.equal(await page.locator(tid('s-agent-name')).inputValue(), 'shopping bot')
  assert.equal(await page.locator(tid('save-label')).count(), 0, 'one way to save')
  await page.locator(tid('s-agent-name')).fill('')
  await page.locator(tid('s-save')).click()
  await page.waitForFunction(() => /Name removed/.test(document.querySelector('[data-testid="s-agent"]').textContent))
  assert.deepEqual(await calls(page, 'agent_label_set'), [{ agent: AGENT, label: null }])
  await page.locator(tid('s-agent-name')).fill('  groceries ')
  await page.locator(tid('s-save')).click()
  await page.waitForFunction(() => window.__parleyCalls.filter(([c]) => c === 'agent_label_set').length === 2)
  assert.deepEqual((await calls(page, 'agent_label_set'))[1], { agent: AGENT, label: 'groceries' })
  await page.locator(tid('s-save')).click()
  await page.waitForTimeout(200)
  assert.equal((await calls(page, 'agent_label_set')).length, 2, 'an unchanged name is not sent again')
  // Start at login: the checkbox sits beside its words, on one line.
  const [box, words] = await Promise.all([page.locator(tid('s-autostart')).boundingBox(), page.locator(`${tid('s-autostart-label')} span`).boundingBox()])
  assert.ok(Math.abs(box.y + box.height / 2 - (words.y + words.height / 2)) < 8 && box.x < words.x, `beside: ${JSON.stringify([box, words])}`)
  // Plain words; developer details only in their disclosure.
  const plain = await page.evaluate(() => { const c = document.querySelector('main, #app').cloneNode(true); c.querySelectorAll('details.advanced').forEach((d) => d.remove()); return c.innerText })
  assert.doesNotMatch(plain, /Consent horizon|take precedence|before a byte is read|\$PARLEY_CUSTODY_SOCKET/)
  // Start at login is one checkbox, applied at once (not by Save).
  assert.equal(await page.locator(tid('s-autostart')).isChecked(), false)
  await page.locator(tid('s-autostart')).check()
  await page.waitForFunction(() => /^On: .*autostart\/org\.parley\.custody\.desktop starts it hidden/.test(document.querySelector('[data-testid="s-autostart-status"]').textContent))
  assert.deepEqual(await calls(page, 'autostart_set'), [{ enabled: true }])
  // Another OS user's agents: every change is shown before the password is asked,
  // the backend gets back exactly what was shown, and the socket switches on restart.
  await page.locator(tid('s-agent-user')).fill('bot')
  await page.locator(tid('s-agent-plan')).click()
  await page.locator(tid('s-agent-steps')).waitFor()
  assert.match(await text(page, 's-agent-steps'), /create the group parley-agents.*add the user bot.*\/srv\/parley-custody\/me\/custody\.sock/s)
  await page.locator(tid('s-agent-apply')).click()
  await page.waitForFunction(() => /^Done\. bot’s agents may connect/.test(document.querySelector('[data-testid="s-agent-status"]').textContent))
  assert.deepEqual(await calls(page, 'agent_user_apply'), [{ user: 'bot', shown: ['1. create the group parley-agents', '2. add the user bot to the group parley-agents'] }])
  assert.equal(await page.locator(tid('s-socket')).inputValue(), '/srv/parley-custody/me/custody.sock')
  await page.locator(tid('s-restart')).waitFor()
  // Editing the name drops the plan: nothing can be applied that was not shown for it.
  await page.locator(tid('s-agent-user')).fill('other')
  assert.equal(await page.locator(tid('s-agent-steps')).isHidden(), true)
  assert.deepEqual(page.problems, [])
  await page.close()
})

test('settings: when the OS prompt cannot name the decision, one sentence and a button for the administrator\'s step', async () => {
  const unnamed = 'Your OS password prompt cannot say what it signs (it shows $(decision)): polkit names the decision only for users an administrator named as owners of custody\'s polkit actions, and me is not one yet. The password is still asked.'
  const sv = (words) => settingsView({}, { step_up_root: null, prompt_unnamed: words })
  const page = await open('settings.html', {
    keys_list: { store: 'the OS keychain', keys: status().keys },
    settings_get: sv(unnamed),
    prompt_owner_apply: sv(null),
    agent_pauses: { paused: [], agents: [], now: 0 },
  }, { label: 'main', width: 800, height: 1000 })
  await page.locator(tid('s-prompt-unnamed')).waitFor()
  assert.equal(await text(page, 's-prompt-unnamed'), unnamed)
  assert.match(await text(page, 's-prompt-owner'), /administrator’s password/)
  await page.locator(tid('s-prompt-owner')).click()
  await page.waitForFunction(() => /^Done\. Your OS password prompt now says what it signs/.test(document.querySelector('[data-testid="s-prompt-owner-status"]').textContent))
  assert.deepEqual(await calls(page, 'prompt_owner_apply'), [{}])
  assert.equal(await page.locator(tid('s-prompt-unnamed')).isHidden(), true)
  assert.equal(await page.locator(tid('s-prompt-owner')).isHidden(), true)
  assert.deepEqual(page.problems, [])
  await page.close()
  // A prompt that names the decision: neither is shown.
  const named = await open('settings.html', {
    keys_list: { store: 'the OS keychain', keys: status().keys },
    settings_get: sv(null),
    agent_pauses: { paused: [], agents: [], now: 0 },
  }, { label: 'main', width: 800, height: 1000 })
  await named.locator(tid('s-stepup')).waitFor()
  assert.equal(await named.locator(tid('s-prompt-unnamed')).isHidden(), true)
  assert.equal(await named.locator(tid('s-prompt-owner')).isHidden(), true)
  await named.close()
})

test('settings as root: the step-up choice says OS authentication protects nothing there, and why', async () => {
  const sv = (root) => settingsView({}, {
    data_dir: '/root/.local/share/parley-custody',
    policy: { own_uid: root ? 0 : 1000, agents_group: null, extra_uids: [] },
    autostart: { enabled: false, offered: true, entry: '/root/.config/autostart/org.parley.custody.desktop', error: null },
    step_up_root: root ? 'Custody runs as root (uid 0). OS authentication cannot protect anything for root: the system authorizes root without asking for a password, so whatever rule is chosen here, your click alone signs. Run custody as your normal desktop user for real keys.' : null,
  })
  for (const root of [true, false]) {
    const page = await open('settings.html', {
      keys_list: { store: 'the OS keychain', keys: status().keys },
      settings_get: sv(root),
      agent_pauses: { paused: [], agents: [], now: 0 },
    }, { label: 'main', width: 800, height: 1000 })
    await page.locator(tid('s-stepup')).waitFor()
    const recommended = await page.locator(`${tid('s-stepup')} option[value="committing"]`).textContent()
    if (root) {
      assert.match(await text(page, 's-stepup-root'), /cannot protect anything for root: the system authorizes root without asking/)
      assert.match(await text(page, 's-stepup-root'), /normal desktop user/)
      assert.doesNotMatch(recommended, /recommended/, 'nothing is recommended as if it protected root')
    } else {
      assert.equal(await page.locator(tid('s-stepup-root')).count(), 0)
      assert.match(recommended, /\(recommended\)/)
    }
    assert.deepEqual(page.problems, [])
    await page.close()
  }
})

test('main window: home, the own grant form, audit and settings are its views, one navigation marks where you are', async () => {
  for (const [file, view, fixtures] of [
    ['index.html', 'home', { status: status(), pending_list: [], open_window: null }],
    ['grant.html', 'grant', grantFixtures({ open_window: null })],
    ['audit.html', 'audit', { status: status(), audit_query: { events: [], truncated: false, live: [], verify: { rows: 0, ok: true, first_bad_seq: null, problem: null }, now: now() }, agent_pauses: { paused: [], agents: [], now: now() }, open_window: null }],
  ]) {
    const page = await open(file, fixtures, { label: 'main', width: 1100, height: 680 })
    await page.locator(tid('open-home')).waitFor()
    const current = await page.locator('nav [aria-current="page"]').getAttribute('data-testid')
    assert.equal(current, `open-${view}`, file)
    await page.locator(tid(`open-${view}`)).click()
    const others = ['home', 'grant', 'audit', 'settings'].filter((v) => v !== view)
    for (const other of others) await page.locator(tid(`open-${other}`)).click()
    const kinds = (await calls(page, 'open_window')).map((a) => a.kind)
    assert.deepEqual(kinds, others.map((v) => (v === 'home' ? 'main' : v)), `${file}: the current view is not opened again`)
    await page.close()
  }
})

test('grant form: Cancel goes back home in the main window; a request’s form goes back to its review', async () => {
  const own = await open('grant.html', grantFixtures({ open_window: null, window_close: null }), { label: 'main', width: 1100, height: 680 })
  await own.locator(tid('cancel')).click()
  await own.waitForFunction(() => window.__parleyCalls.some(([c]) => c === 'open_window'))
  assert.deepEqual(await calls(own, 'open_window'), [{ kind: 'main', id: null, agent: null }])
  assert.deepEqual(await calls(own, 'window_close'), [], 'the main window stays open')
  await own.close()
  const req = await open('grant.html#request=q7', grantFixtures({ grant_context: { ...grantFixtures().grant_context, request: grantRequest() }, open_window: null, window_close: null }), { label: 'review-q7', width: 720, height: 680 })
  await req.locator(tid('request-banner')).waitFor()
  assert.equal(await req.locator(tid('open-home')).count(), 0, 'a request’s form is not the main window')
  await req.locator(tid('cancel')).click()
  await req.waitForURL(/\/review\.html#q7$/)
  assert.deepEqual(await calls(req, 'open_window'), [])
  assert.deepEqual(await calls(req, 'window_close'), [], 'not closed: the review is shown again')
  await req.close()
})

test('the UI never parses data as HTML', async () => {
  const src = join(here, '..', 'src')
  for (const f of await readdir(src)) {
    const code = await readFile(join(src, f), 'utf8')
    for (const bad of ['innerHTML', 'outerHTML', 'insertAdjacentHTML', 'document.write', 'DOMParser', 'createContextualFragment', 'eval(', 'new Function']) {
      assert.ok(!code.includes(bad), `${f} uses ${bad}`)
    }
  }
})

test('review: a job tool’s plan shows its input and is approved only with its phrase typed', async () => {
  const p = consent({
    review: {
      dialect: 'yea1',
      capability: 'refund',
      cost: '30.00 USD',
      uses: [{ measure: 'spend', words: '30.00 USD', money: { amount: 3000, currency: 'USD' } }],
      job: { tool: 'refund', input: ['charge: ch_1', 'who: Chen \\u{202e}evil'], phrase: 'ch_1', plan_hash: 'UPpWLxQccC5Ckj_gj9dkvb7ourHaoPykuHRm8x5CPy4' },
    },
  })
  const page = await open('review.html#q1', reviewFixtures(p), { label: 'review-q1' })
  await page.locator(tid('job')).waitFor()
  assert.equal(await text(page, 'job-tool'), 'refund')
  assert.equal(await text(page, 'job-input'), 'charge: ch_1\nwho: Chen \\u{202e}evil')
  assert.equal(await text(page, 'job-phrase-wanted'), '“ch_1”')
  await page.waitForFunction(() => !document.querySelector('[data-testid="approve"]').disabled)
  await page.locator(tid('approve')).click()
  assert.deepEqual(await calls(page, 'review_decide'), [], 'no phrase, no decision')
  assert.match(await text(page, 'status'), /Type “ch_1”/)
  await page.locator(tid('job-phrase')).fill(' CH_1 ')
  await page.locator(tid('approve')).click()
  await page.locator(`${tid('status')}.msg-ok`).waitFor()
  assert.deepEqual(await calls(page, 'review_decide'), [{ id: 'q1', approve: true, confirmed: false, gesture: 'click', reason: null, typed: ' CH_1 ' }])
  assert.deepEqual(page.problems, [])
  await page.close()
})

test('home: "Stop all agents" freezes at once; while frozen it says so, and Unfreeze lists what was refused', async () => {
  const frozen = { frozen: true, since: now(), reason: 'all agents stopped from the main window', refused: 0, refused_rows: [], denied: 2 }
  const page = await open('index.html', {
    status: status(),
    pending_list: [consent()],
    open_window: null,
    custody_frozen: { frozen: false, since: null, reason: null, refused: 0, refused_rows: [], denied: 0 },
    custody_freeze: frozen,
    custody_unfreeze: { frozen: false, since: now() - 60, reason: 'x', refused: 3, refused_rows: [{ at: now() - 30, peer_uid: 1001, agent: 'bot\u202e', service: 'shop.example' }], denied: 0 },
  })
  await page.locator(tid('stop-all')).waitFor()
  assert.match(await text(page, 'freeze'), /refuses every new request until you unfreeze.*stay valid until they expire or you revoke/)
  await page.evaluate((f) => {
    window.__PARLEY_FIXTURES__.custody_frozen = f
    window.__PARLEY_FIXTURES__.pending_list = []
  }, frozen)
  await page.locator(tid('stop-all')).click()
  await page.locator(tid('frozen')).waitFor()
  assert.equal((await calls(page, 'custody_freeze')).length, 1, 'one click freezes, nothing else asked')
  assert.match(await text(page, 'frozen'), /all agents are stopped\. Every request is refused without being shown/)
  // The pending list empties (its card is hidden when nothing waits).
  await page.locator(tid('pending-item')).waitFor({ state: 'detached' })
  assert.equal(await page.locator(tid('pending-section')).isVisible(), false)
  await page.evaluate(() => (window.__PARLEY_FIXTURES__.custody_frozen = { frozen: false, since: null, reason: null, refused: 0, refused_rows: [], denied: 0 }))
  await page.locator(tid('unfreeze')).click()
  await page.locator(tid('unfrozen')).waitFor()
  assert.match(await text(page, 'unfrozen'), /3 requests were refused while it was frozen/)
  assert.match(await text(page, 'freeze-refused'), /user 1001 · agent bot\\u\{202e\} · shop\.example/)
  // A status refresh keeps the list shown, with Stop all agents under it.
  await page.evaluate(() => window.__parleyEmit('status-changed'))
  await page.locator(tid('stop-all')).waitFor()
  assert.equal(await page.locator(tid('freeze-refused')).isVisible(), true)
  assert.deepEqual(page.problems, [])
  await page.close()
})

test('home: a refused unfreeze stays frozen and says why', async () => {
  const frozen = { frozen: true, since: now(), reason: 'x', refused: 1, refused_rows: [], denied: 0 }
  const page = await open('index.html', {
    status: status(),
    pending_list: [],
    custody_frozen: frozen,
    custody_unfreeze: { __error: { code: 'not_authenticated', message: 'OS authentication failed or was cancelled: nothing changed (custody was asked to unfreeze custody (let agents ask again)).' } },
  })
  await page.locator(tid('unfreeze')).click()
  await page.locator(`${tid('freeze-status')}.msg-error`).waitFor()
  assert.match(await text(page, 'freeze-status'), /nothing changed/)
  assert.equal(await page.locator(tid('frozen')).isVisible(), true)
  assert.equal(await page.locator(tid('unfreeze')).isEnabled(), true)
  await page.close()
})

test('audit: a live grant is revoked from its row; the view says services that do not check revocations still accept it', async () => {
  const grant = event({ seq: 3, kind: 'grant_issued', token_id: 'GRANTID1', preview: 'may do anything at shop.example, until …', caveat_words: ['only at the services "shop.example"'] })
  const view = { events: [grant], truncated: false, live: [grant], revoked: [], verify: { rows: 1, ok: true, first_bad_seq: null, problem: null }, now: now() }
  const page = await open('audit.html', {
    audit_query: view,
    agent_pauses: { paused: [], agents: [], now: now() },
    grant_revoke: { grant: 'GRANTID1', files: ['/home/me/.local/share/parley-custody/revocations/GRANTID1.json'], note: 'Services that do not check revocations still accept it until it expires.' },
  }, { label: 'main', width: 1200, height: 900 })
  await page.locator(tid('revoke')).waitFor()
  assert.match(await text(page, 'revoke-note'), /Services that do not check revocations still accept the grant until it expires/)
  await page.evaluate(() => (window.__PARLEY_FIXTURES__.audit_query = { ...window.__PARLEY_FIXTURES__.audit_query, revoked: ['GRANTID1'] }))
  await page.locator(tid('revoke')).click()
  await page.locator(`${tid('revoke-status')}.msg-ok`).waitFor()
  assert.deepEqual(await calls(page, 'grant_revoke'), [{ grant: 'GRANTID1', reason: null }])
  assert.match(await text(page, 'revoke-status'), /revocations\/GRANTID1\.json/)
  await page.locator(tid('revoked')).waitFor()
  assert.match(await text(page, 'revoked'), /still accepted until it expires by services that do not check revocations/)
  assert.deepEqual(page.problems, [])
  await page.close()
})
