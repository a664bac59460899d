// The review window follows the session's lock (issue 30, item 2): while the
// service says the session is locked, Approve is off and says why; on unlock
// it waits the whole arming delay again. The service refuses an approval
// while locked whatever the page shows (custody/tests/session_lock_and_sleep.rs).
// Run: npm run build && node --test tests/session.test.mjs

import { test } from 'node:test'
import assert from 'node:assert/strict'
import { open, calls, tid, text, approveOn } from './pages.mjs'
import { consent, status, reviewFixtures, settingsView, APPROVE_DELAY_MS } from './fixtures.mjs'

function fixtures(p, session) {
  return reviewFixtures(p, { status: status({ session }) }, 'Approved.')
}

test('review: Approve is off while the screen is locked, and waits the whole delay again after unlock', async () => {
  const page = await open('review.html#q1', fixtures(consent(), null), { label: 'review-q1' })
  const approve = page.locator(tid('approve'))
  await approve.waitFor()
  await approveOn(page)
  // Locked: the service says so (status-changed, then status): off, and why.
  await page.evaluate(() => {
    window.__PARLEY_FIXTURES__.status = { ...window.__PARLEY_FIXTURES__.status, session: 'locked' }
    return window.__parleyEmit('status-changed')
  })
  await page.waitForFunction(() => document.querySelector('[data-testid="approve"]').disabled)
  assert.equal(await text(page, 'approve-hint'), 'Approve is off while the screen is locked.')
  await approve.click({ force: true })
  assert.deepEqual(await calls(page, 'review_decide'), [], 'a click while locked does nothing')
  await page.waitForTimeout(APPROVE_DELAY_MS + 100)
  assert.equal(await approve.isDisabled(), true, 'still off while locked')
  // Unlocked: the whole delay again.
  const unlockedAt = await page.evaluate(async () => {
    window.__PARLEY_FIXTURES__.status = { ...window.__PARLEY_FIXTURES__.status, session: null }
    const t = performance.now()
    await window.__parleyEmit('status-changed')
    return t
  })
  await page.waitForFunction(() => /^Approve in /.test(document.querySelector('[data-testid="approve-hint"]').textContent))
  const onAt = await (await approveOn(page)).jsonValue()
  assert.ok(onAt - unlockedAt >= APPROVE_DELAY_MS - 50, `the delay restarts on unlock (${onAt - unlockedAt} ms)`)
  assert.deepEqual(page.problems, [])
  await page.close()
})

test('review: a review opened while the computer goes to sleep is not armed', async () => {
  const page = await open('review.html#q1', fixtures(consent(), 'asleep'), { label: 'review-q1' })
  await page.locator(tid('approve')).waitFor()
  await page.waitForFunction(() => /sleep/.test(document.querySelector('[data-testid="approve-hint"]').textContent))
  assert.equal(await text(page, 'approve-hint'), 'Approve is off while the computer goes to sleep.')
  await page.waitForTimeout(APPROVE_DELAY_MS + 100)
  assert.equal(await page.locator(tid('approve')).isDisabled(), true)
  await page.close()
})

test('settings: "Hide details in notifications" says when in plain words, and is saved', async () => {
  const sv = settingsView({ autostart_offered: true, hide_notification_details: 'when_locked' })
  const page = await open('settings.html', {
    keys_list: { store: 'the OS keychain', keys: status().keys },
    settings_get: sv,
    settings_save: sv,
    settings_loosenings: [],
    agent_pauses: { paused: [], agents: [], now: 0 },
  }, { label: 'main', width: 800, height: 1000 })
  const sel = page.locator(tid('s-hide-details'))
  await sel.waitFor()
  assert.equal(await sel.inputValue(), 'when_locked')
  assert.deepEqual(await sel.locator('option').allInnerTexts(), ['When the screen is locked (recommended)', 'Always'])
  await sel.selectOption('always')
  await page.locator(tid('s-save')).click()
  await page.waitForFunction(() => window.__parleyCalls.some(([c]) => c === 'settings_save'))
  assert.equal((await calls(page, 'settings_save'))[0].settings.hide_notification_details, 'always')
  assert.deepEqual(page.problems, [])
  await page.close()
})
