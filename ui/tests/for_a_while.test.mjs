// "Approve for a while" in the review window (issue 30, item 4), in
// headless Chromium with the IPC mocked: offered below the amount, off by
// default, amount and minutes from custody's bounded choices only, the
// grant in words before Approve (in the body and in the footer that stays
// on screen), sent with Approve only when chosen; not shown when custody
// offers nothing (a grant request, a job, frozen).

import { test } from 'node:test'
import assert from 'node:assert/strict'
import { open, calls, tid, text, enabled, approvals } from './pages.mjs'
import { consent, grantRequest, reviewFixtures, settingsView } from './fixtures.mjs'

const OFFER = {
  order: { amount: 7136, currency: 'USD' },
  ceiling: 71360,
  amounts: [5000, 10000, 20000, 50000],
  minutes: [5, 15, 30, 60],
  service: 'shop.example',
  capability: 'shop.order',
  agent_name: 'cactus orbit lemon frost',
  amount_words: ['50.00 USD', '100.00 USD', '200.00 USD', '500.00 USD'],
  asks_password: true,
}

function fixtures(p, extra = {}) {
  return reviewFixtures(p, { review_for_a_while: OFFER, status: { pending: 1 }, ...extra }, 'Approved.')
}

test('for a while: offered below the amount, off by default; Approve alone sends no grant', async () => {
  const page = await open('review.html#q1', fixtures(consent()), { label: 'review-q1', width: 1024, height: 600 })
  await page.locator(tid('for-a-while-on')).waitFor()
  assert.deepEqual(await calls(page, 'review_for_a_while'), [{ id: 'q1' }])
  assert.equal(await page.locator(tid('for-a-while-on')).isChecked(), false, 'off by default')
  assert.equal(await page.locator(tid('for-a-while-amount')).isDisabled(), true)
  assert.equal(await page.locator(tid('for-a-while-words')).isVisible(), false)
  // Below the amount (the headline), above why custody asks.
  const order = await page.evaluate(() => [...document.querySelectorAll('[data-testid="headline"], [data-testid="for-a-while"], [data-testid="footer"]')].map((e) => e.dataset.testid))
  assert.deepEqual(order, ['headline', 'for-a-while', 'footer'])
  // Bounded choices only: custody's amounts and minutes.
  const amounts = await page.locator(`${tid('for-a-while-amount')} option`).allInnerTexts()
  assert.deepEqual(amounts, OFFER.amount_words)
  const minutes = await page.locator(`${tid('for-a-while-minutes')} option`).allInnerTexts()
  assert.deepEqual(minutes, ['5 minutes', '15 minutes', '30 minutes', '60 minutes'])
  await enabled(page, 'approve')
  await page.locator(tid('approve')).click()
  await page.locator(`${tid('status')}.msg-ok`).waitFor()
  assert.deepEqual(await approvals(page), [{ id: 'q1', approve: true, confirmed: false, gesture: 'click', reason: null }])
  assert.deepEqual(page.problems, [])
  await page.close()
})

test('for a while: chosen, its words show before Approve, the footer stays in view, and Approve sends the choice', async () => {
  const page = await open('review.html#q1', fixtures(consent()), { label: 'review-q1', width: 1024, height: 600 })
  await page.locator(tid('for-a-while-on')).check()
  await page.locator(tid('for-a-while-amount')).selectOption('10000')
  await page.locator(tid('for-a-while-minutes')).selectOption('30')
  const words = 'and let “cactus orbit lemon frost” spend up to 100.00 USD more at shop.example in the next 30 minutes without asking'
  assert.ok((await text(page, 'for-a-while-words')).includes(words), await text(page, 'for-a-while-words'))
  assert.match(await text(page, 'for-a-while-words'), /stop all agents.*revoke.*screen locks/)
  // The footer (with the words, Deny and Approve) is on screen without scrolling.
  const foot = await page.locator(tid('for-a-while-foot')).innerText()
  assert.equal(foot, 'Approving also lets “cactus orbit lemon frost” spend up to 100.00 USD more at shop.example in the next 30 minutes without asking.')
  for (const id of ['for-a-while-foot', 'approve', 'deny']) {
    const box = await page.locator(tid(id)).boundingBox()
    assert.ok(box && box.y >= 0 && box.y + box.height <= 600, `${id} in view: ${JSON.stringify(box)}`)
  }
  await enabled(page, 'approve')
  await page.locator(tid('approve')).click()
  await page.locator(`${tid('status')}.msg-ok`).waitFor()
  assert.deepEqual(await approvals(page), [{ id: 'q1', approve: true, confirmed: false, gesture: 'click', reason: null, for_a_while: { amount: 10000, minutes: 30 } }])
  assert.equal(await page.locator(tid('for-a-while-on')).isDisabled(), true, 'decided: no more changes')
  // Unticked again before a Deny: a deny never carries it.
  assert.deepEqual(page.problems, [])
  await page.close()
})

test('for a while: when only the grant needs the password, its words say the OS asks', async () => {
  const p = consent({ step_up: { required: false, words: 'No password is asked for this approval.' } })
  const page = await open('review.html#q1', fixtures(p), { label: 'review-q1' })
  await page.locator(tid('for-a-while-on')).check()
  assert.match(await text(page, 'for-a-while-words'), /Your system asks for your password before signing both\./)
  await page.close()
  const asked = await open('review.html#q1', fixtures(consent()), { label: 'review-q1' })
  await asked.locator(tid('for-a-while-on')).check()
  assert.doesNotMatch(await text(asked, 'for-a-while-words'), /before signing both/, 'the step-up line already says so')
  await asked.close()
})

test('for a while: the agent renamed while the review is open, the offer names it by its new name and keeps the choice', async () => {
  const page = await open('review.html#q1', fixtures(consent(), { agent_label_set: null }), { label: 'review-q1', width: 1024, height: 600 })
  await page.locator(tid('for-a-while-on')).check()
  await page.locator(tid('for-a-while-amount')).selectOption('20000')
  await page.locator(tid('for-a-while-minutes')).selectOption('60')
  assert.equal(await text(page, 'for-a-while-label'), 'Also let “cactus orbit lemon frost” spend more at shop.example without asking, for a while')
  // Named in this review: custody's offer now names it so.
  await page.evaluate(() => (window.__PARLEY_FIXTURES__.review_for_a_while = { ...window.__PARLEY_FIXTURES__.review_for_a_while, agent_name: 'shopping bot' }))
  await page.locator(`${tid('agent-naming')} summary`).click()
  await page.locator(tid('agent-name')).fill('shopping bot')
  await page.locator(tid('agent-name-save')).click()
  await page.waitForFunction(() => /shopping bot/.test(document.querySelector('[data-testid="for-a-while-foot"]').textContent))
  const said = (name) => `let “${name}” spend up to 200.00 USD more at shop.example in the next 60 minutes without asking`
  assert.equal(await text(page, 'for-a-while-label'), 'Also let “shopping bot” spend more at shop.example without asking, for a while')
  assert.ok((await text(page, 'for-a-while-words')).includes(said('shopping bot')), await text(page, 'for-a-while-words'))
  assert.equal(await text(page, 'for-a-while-foot'), `Approving also lets ${said('shopping bot').replace(/^let /, '')}.`)
  // Renamed in another window: custody says pending-changed; the offer follows.
  await page.evaluate(() => {
    const f = window.__PARLEY_FIXTURES__
    f.review_for_a_while = { ...f.review_for_a_while, agent_name: 'groceries' }
    f.review_get = { ...f.review_get, review: { ...f.review_get.review, agent: { ...f.review_get.review.agent, label: 'groceries', name: 'groceries' } } }
    return window.__parleyEmit('pending-changed')
  })
  await page.waitForFunction(() => /groceries/.test(document.querySelector('[data-testid="for-a-while-foot"]').textContent))
  assert.ok((await text(page, 'for-a-while-words')).includes(said('groceries')), await text(page, 'for-a-while-words'))
  assert.equal(await text(page, 'for-a-while-label'), 'Also let “groceries” spend more at shop.example without asking, for a while')
  // The choice the human made stands, and Approve sends it.
  assert.equal(await page.locator(tid('for-a-while-on')).isChecked(), true)
  await enabled(page, 'approve')
  await page.locator(tid('approve')).click()
  await page.locator(`${tid('status')}.msg-ok`).waitFor()
  assert.deepEqual((await approvals(page))[0].for_a_while, { amount: 20000, minutes: 60 })
  assert.deepEqual(page.problems, [])
  await page.close()
})

test('for a while: not shown when custody offers nothing (a grant request, a job, frozen)', async () => {
  for (const [p, offer] of [
    [consent(), null],
    [grantRequest(), OFFER],
  ]) {
    const page = await open('review.html#q1', fixtures(p, { review_for_a_while: offer }), { label: 'review-q1' })
    await page.locator(tid('approve')).waitFor()
    await page.waitForTimeout(300)
    assert.equal(await page.locator(tid('for-a-while')).isVisible(), false)
    assert.equal(await page.locator(tid('for-a-while-foot')).isVisible(), false)
    assert.deepEqual(page.problems, [])
    await page.close()
  }
})

test('for a while: settings offer "End approve-for-a-while grants when the screen locks", on by default, and save it', async () => {
  const sv = settingsView({ autostart_offered: true, end_short_grants_on_lock: true })
  const page = await open('settings.html', {
    keys_list: { store: 'the OS keychain', keys: [] },
    settings_get: sv,
    settings_save: sv,
    settings_loosenings: [{ field: 'end_short_grants_on_lock', words: 'keep approve-for-a-while grants alive while the screen is locked' }],
    agent_pauses: { paused: [], agents: [], now: 0 },
  }, { label: 'main', width: 800, height: 1000 })
  const box = page.locator(tid('s-end-short-on-lock'))
  await box.waitFor()
  assert.equal(await box.isChecked(), true, 'on by default')
  await box.uncheck()
  await page.locator(tid('s-save')).click()
  await page.waitForFunction(() => window.__parleyCalls.some(([c]) => c === 'settings_save'))
  const [saved] = await calls(page, 'settings_save')
  assert.equal(saved.settings.end_short_grants_on_lock, false)
  assert.deepEqual(page.problems, [])
  await page.close()
})
