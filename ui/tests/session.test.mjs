// The review window follows the session's lock (issue 30, item 2): while the
// service says the session is locked, Approve is off and says why; on unlock
// it waits the whole arming delay again. The service refuses an approval
// while locked whatever the page shows (custody/tests/session_lock_and_sleep.rs).
// Run: npm run build && node --test tests/session.test.mjs

import { test } from 'node:test'
import assert from 'node:assert/strict'
import { open, calls, tid, text, approveOn } from './pages.mjs'
import { consent, grantRequest, status, now, AGENT, PRINCIPAL, reviewFixtures, settingsView, APPROVE_DELAY_MS } from './fixtures.mjs'

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

/** The grant form's calls, answering `request` (null: the human's own form). */
function grantFixtures(request, session) {
  return {
    grant_context: {
      principals: [{ public: PRINCIPAL, short: 'ed25519:iojj3XQJ8Z…', label: 'principal', created_at: now(), source: 'created', status: 'present' }],
      known_agents: [{ key: AGENT, short: 'ed25519:gTl3Dqh9F1…', label: 'shopping bot', last_seen: now() - 3600, waiting: false }],
      max_grant_lifetime_secs: 7 * 86400,
      request,
    },
    grant_issue: { sent_to_agent: !!request, token: request ? null : 'pg1.TOKEN', caveats: [], caveat_words: [], preview: 'may …', warnings: [] },
    grant_preview: { __echo: true, value: { caveat_words: [], preview: 'may, says custody, {caveats}', warnings: [], widenings: [], principal: PRINCIPAL, principal_label: 'principal', principal_short: 'ed25519:iojj3XQJ8Z…' } },
    agent_label_set: null,
    window_close: null,
    status: status({ session }),
  }
}

const setSession = (page, session) =>
  page.evaluate((s) => {
    window.__PARLEY_FIXTURES__.status = { ...window.__PARLEY_FIXTURES__.status, session: s }
    return window.__parleyEmit('status-changed')
  }, session)

test('grant form: while the screen is locked it says issuing is off, Issue stays off; after unlock the whole delay again', async () => {
  for (const [file, label, request] of [
    ['grant.html', 'main', null],
    ['grant.html#request=q7', 'review-q7', grantRequest()],
  ]) {
    const page = await open(file, grantFixtures(request, 'locked'), { label, width: 760, height: 1000 })
    await page.locator('#agent').waitFor()
    if (!request) {
      await page.locator('#known').selectOption(AGENT)
      await page.locator('#services').fill('shop.example')
      await page.locator('#exp-8h').check()
    }
    // Previewed and complete: only the lock keeps Issue off, and the page says so.
    await page.waitForFunction(() => document.querySelector('[data-testid="preview"]').textContent.includes('says custody'))
    await page.locator(tid('session-held')).waitFor()
    assert.equal(await text(page, 'session-held'), 'The screen is locked: issuing is off until you unlock it. Nothing is signed meanwhile.', file)
    assert.equal(await text(page, 'issue-hint'), 'Issue is off while the screen is locked.', file)
    await page.waitForTimeout(APPROVE_DELAY_MS + 100)
    const issue = page.locator(tid('issue'))
    assert.equal(await issue.isDisabled(), true, `${file}: off while locked`)
    await issue.click({ force: true })
    assert.deepEqual(await calls(page, 'grant_issue'), [], `${file}: a click while locked does nothing`)
    // Going to sleep says so too.
    await setSession(page, 'asleep')
    await page.waitForFunction(() => /sleep/.test(document.querySelector('[data-testid="issue-hint"]').textContent))
    assert.equal(await text(page, 'session-held'), 'The computer is going to sleep: issuing is off until it wakes up. Nothing is signed meanwhile.')
    // Unlocked: the line goes, and Issue arms after the whole delay.
    const unlockedAt = await page.evaluate(async () => {
      window.__PARLEY_FIXTURES__.status = { ...window.__PARLEY_FIXTURES__.status, session: null }
      const t = performance.now()
      await window.__parleyEmit('status-changed')
      return t
    })
    await page.locator(tid('session-held')).waitFor({ state: 'hidden' })
    const onAt = await (await page.waitForFunction(() => !document.querySelector('[data-testid="issue"]').disabled && performance.now())).jsonValue()
    assert.ok(onAt - unlockedAt >= APPROVE_DELAY_MS - 50, `${file}: the delay restarts on unlock (${onAt - unlockedAt} ms)`)
    assert.deepEqual(page.problems, [])
    await page.close()
  }
})

test('home: says while the screen is locked (or the computer goes to sleep) that nothing is approved or issued, and stops saying it on unlock', async () => {
  const page = await open('index.html', { status: status({ session: 'locked', pending: 1 }), pending_list: [consent()], custody_frozen: null, open_window: null })
  await page.locator(tid('session-held')).waitFor()
  assert.equal(await text(page, 'session-held'), 'The screen is locked: approving and issuing are off until you unlock it. Requests wait; nothing is signed meanwhile.')
  await setSession(page, 'asleep')
  await page.waitForFunction(() => /sleep/.test(document.querySelector('[data-testid="session-held"]')?.textContent ?? ''))
  assert.equal(await text(page, 'session-held'), 'The computer is going to sleep: approving and issuing are off until it wakes up. Requests wait; nothing is signed meanwhile.')
  await setSession(page, null)
  await page.locator(tid('session-held')).waitFor({ state: 'detached' })
  assert.deepEqual(page.problems, [])
  await page.close()
})
