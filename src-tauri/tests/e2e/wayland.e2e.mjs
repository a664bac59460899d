// The real app under a Wayland compositor instead of X (GNOME and KDE
// default to Wayland): weston's headless backend, no X server in the
// session at all (scripts/test-app.sh, session `wayland`: DISPLAY unset,
// WAYLAND_DISPLAY=wl-test, GDK_BACKEND=wayland), driven through
// tauri-driver + WebKitWebDriver like the X sessions.
//
// What weston gives and what it does not (docs/TESTING.md, "Wayland"):
// the compositor activates ("puts in front") each new toplevel; it has no
// seat (no keyboard, no pointer), so no page ever gets keyboard focus and
// the page's own Approve stays off: the service's rule, which times an
// approval from the compositor's activation of the window, is called as
// the page would call it. weston has no StatusNotifier host (the tray item
// is read off the bus) and no notification daemon runs under it (dunst
// needs wlr-layer-shell): the app says so and opens reviews by itself.

import { test, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { mkdirSync, readFileSync, statSync } from 'node:fs'
import { join } from 'node:path'
import { Agent, agentKey, proposal, consentRequest } from './agent.mjs'
import { trayCount, trayNames } from './tray.mjs'
import { PARLEY, SOCKET, SHOTS, tid, sleep, wd, main, startApp, createKey, invoke, notified, newestPid } from './session.mjs'

let agent
let principal
const me = agentKey()

before(async () => {
  mkdirSync(SHOTS, { recursive: true })
  await startApp()
})

after(async () => {
  agent?.close()
  await wd.quit()
})

/** Sends consent request `id` for `amount` cents; resolves when custody says it waits. */
function ask(id, amount, service = 'shop.example') {
  const p = proposal(PARLEY, { id: `p_${id}`, amount })
  agent.send(consentRequest(id, { proposal: p, principal, agent: me, service }))
  return agent.pending(id)
}

/** Asks custody to approve request `q` from the current window, as its page would. */
const approve = (q) => invoke('review_decide', { id: q, approve: true, confirmed: false, gesture: 'click', reason: null })

test('the app runs as a Wayland client and its home window renders', async () => {
  const env = readFileSync(`/proc/${newestPid('parley-custody')}/environ`, 'utf8').split('\0')
  assert.ok(env.includes('WAYLAND_DISPLAY=wl-test'), 'on the compositor')
  assert.ok(!env.some((e) => e.startsWith('DISPLAY=')), 'no X display to fall back to')
  // The web engine draws on the CPU here (webkit.rs for_the_display): without
  // it the web process died before its first frame and the page never came.
  const said = readFileSync(join(process.env.T, 'tauri-driver.log'), 'utf8')
  assert.match(said, /on Wayland: the web engine draws without compositing/)
  principal = await createKey('Ana (personal)')
  const shot = join(SHOTS, 'wayland-home.png')
  await wd.screenshot(shot)
  assert.ok(statSync(shot).size > 10_000, 'a screenshot with the page in it')
  agent = await Agent.connect(SOCKET)
})

// weston's headless backend has no seat: no window is ever given the
// keyboard, so none is in front. On X the service counted every shown window
// as in front; on Wayland the UI reports a window it has no focus for as
// blurred (bridge.rs `shown`), and custody refuses an approval from it
// however long it has been open. (With a seat, the compositor's focus
// event arms it, as under X: not tried here.)
test('reviews open by themselves; with no window in front, custody counts no approval; Deny works', async () => {
  // No tray host and no notification daemon under weston: the review window opens itself.
  await ask('c1', 5830)
  await wd.switchToWindow(/review\.html#q1$/, 20_000)
  assert.equal(await wd.text(tid('cost')), '58.30 USD')
  await wd.screenshot(join(SHOTS, 'wayland-review.png'))
  // The tray item is on the bus with the count, though no host shows it.
  assert.ok(trayNames().length > 0, 'the StatusNotifierItem is registered on the session bus')
  await wd.until(() => trayCount() === 1, 'the tray item counts the waiting request')
  // Well past the arming delay: still not in front, so not armed, on the page or in custody.
  await sleep(2000)
  assert.equal(await wd.prop(tid('approve'), 'disabled'), true, "the page's Approve is off")
  assert.match(await approve('q1'), /in front and focused/)

  // A second request: its own window, also not in front.
  await ask('c2', 1999, 'books.example')
  await wd.switchToWindow(/review\.html#q2$/, 20_000)
  await wd.$(tid('approve'))
  await sleep(2000)
  assert.match(await approve('q2'), /in front and focused/)
  await wd.until(() => trayCount() === 2, 'the tray item counts both')
  assert.ok(!agent.frames.some((f) => f.kind !== 'PENDING'), `nothing decided: ${JSON.stringify(agent.frames)}`)

  // Deny signs nothing and needs no arming: it works from either window.
  await wd.click(tid('deny'))
  assert.equal((await agent.final('c2')).kind, 'DENIED')
  await wd.switchToWindow(/review\.html#q1$/)
  await wd.click(tid('deny'))
  assert.equal((await agent.final('c1')).kind, 'DENIED')
  await wd.until(() => trayCount() === 0, 'the tray count cleared')
})

// dunst (the X sessions' daemon) needs wlr-layer-shell, which weston lacks,
// and fails when the bus starts it; the Notify the service sent is read off
// the session bus, as the X sessions read it.
test('the notification goes out on the bus; with no daemon to show it, the home window says so', async () => {
  assert.match(notified(), /member=Notify[\s\S]*approve 58\.30 USD at shop\.example/)
  await wd.switchTo(main)
  const banner = await wd.until(async () => {
    const b = await wd.exec(`return document.querySelector('[data-testid="no-notifications"]')?.textContent ?? ''`)
    return b || null
  }, 'the notice in the home window')
  assert.match(banner, /Desktop notifications are not available .*still works/)
})
