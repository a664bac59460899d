// The real app under a Wayland compositor instead of X (GNOME and KDE
// default to Wayland): sway (wlroots) on its headless backend, no X server
// in the session at all (scripts/test-app.sh, session `wayland`: DISPLAY
// unset, WAYLAND_DISPLAY=wl-test, GDK_BACKEND=wayland), driven through
// tauri-driver + WebKitWebDriver like the X sessions.
//
// What sway gives here (src-tauri/README.md, "Wayland"): a seat with a
// keyboard (a virtual one, held open by wtype), so the compositor hands the
// keyboard focus to the window it puts in front and GTK reports it as the
// window's focus event, as on a desktop; `swaymsg … focus` moves it, as a
// click on another window would. swaybar is the tray host (the
// StatusNotifierWatcher our item registers with) and dunst shows the
// notifications (it draws with wlr-layer-shell, which sway has).

import { test, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { execFileSync } from 'node:child_process'
import { mkdirSync, readFileSync, statSync } from 'node:fs'
import { join } from 'node:path'
import { Agent, agentKey, proposal, consentRequest } from './agent.mjs'
import { trayCount, trayNames } from './tray.mjs'
import { PARLEY, SOCKET, SHOTS, tid, sleep, wd, startApp, createKey, verify, armed, invoke, notified, newestPid } from './session.mjs'

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

const swaymsg = (...args) => execFileSync('swaymsg', args, { encoding: 'utf8' })

/** The compositor's windows (its tree's views): title, whether it has the focus, where it is. */
function swayWindows() {
  const out = []
  const walk = (n) => {
    if (n.pid) out.push({ title: n.name ?? '', focused: n.focused, rect: n.rect, pid: n.pid })
    for (const c of [...(n.nodes ?? []), ...(n.floating_nodes ?? [])]) walk(c)
  }
  walk(JSON.parse(swaymsg('-t', 'get_tree', '-r')))
  return out
}

/** The title of the window sway has given the keyboard focus ('' if none). */
const inFront = () => swayWindows().find((w) => w.focused)?.title ?? ''

/** Gives the keyboard focus to the window whose title matches `re` (a PCRE), as a click on it would. */
function focusWindow(re) {
  const said = swaymsg(`[title="${re}"] focus`)
  assert.doesNotMatch(said, /error|No matching/i, said)
}

/** The StatusNotifierWatcher's property `name` (swaybar's), as gdbus prints it. */
function watcher(name) {
  return execFileSync(
    'gdbus',
    ['call', '--session', '--dest', 'org.kde.StatusNotifierWatcher', '--object-path', '/StatusNotifierWatcher', '--method', 'org.freedesktop.DBus.Properties.Get', 'org.kde.StatusNotifierWatcher', name],
    { encoding: 'utf8' },
  )
}

/** Sends consent request `id` for `amount` cents; resolves when custody says it waits. */
function ask(id, amount, service = 'shop.example') {
  const p = proposal(PARLEY, { id: `p_${id}`, amount })
  agent.send(consentRequest(id, { proposal: p, principal, agent: me, service }))
  return agent.pending(id).then(() => p)
}

/** The number of notifications dunst is showing. */
const displayed = () => Number(execFileSync('dunstctl', ['count', 'displayed'], { encoding: 'utf8' }))

/** Sends request `id` with dunst showing nothing else; once dunst shows its
 *  notification, clicks it (its default action, "Review"), as a person would. */
async function askAndClick(id, amount, service) {
  execFileSync('dunstctl', ['close-all'])
  await wd.until(() => displayed() === 0, 'dunst showing nothing')
  const p = await ask(id, amount, service)
  await wd.until(() => displayed() === 1, `dunst showing the notification for ${id}`)
  // A person reads it before clicking: custody listens for the click only
  // once the daemon has answered its Notify (a click in between is lost).
  await sleep(500)
  execFileSync('dunstctl', ['action', '0'])
  return p
}

/** Asks custody to approve request `q` from the current window, as its page would. */
const approve = (q) => invoke('review_decide', { id: q, approve: true, confirmed: false, gesture: 'click', reason: null })

test('the app runs as a Wayland client of sway, whose seat has a keyboard; its home window renders', async () => {
  const env = readFileSync(`/proc/${newestPid('parley-custody')}/environ`, 'utf8').split('\0')
  assert.ok(env.includes('WAYLAND_DISPLAY=wl-test'), 'on the compositor')
  assert.ok(!env.some((e) => e.startsWith('DISPLAY=')), 'no X display to fall back to')
  const said = readFileSync(join(process.env.T, 'tauri-driver.log'), 'utf8')
  assert.match(said, /on Wayland: the web engine draws without compositing/)
  assert.match(swaymsg('-t', 'get_seats'), /"type": "keyboard"/, 'the seat has a keyboard')
  principal = await createKey('Ana (personal)')
  // The home window is the one window, and sway gave it the keyboard.
  await wd.until(() => inFront() === 'Parley Custody', `the home window in front: ${JSON.stringify(swayWindows())}`)
  assert.equal(swayWindows().length, 1, JSON.stringify(swayWindows()))
  const shot = join(SHOTS, 'wayland-home.png')
  await wd.screenshot(shot)
  assert.ok(statSync(shot).size > 10_000, 'a screenshot with the page in it')
  agent = await Agent.connect(SOCKET)
})

test('the tray: swaybar hosts StatusNotifier items and lists ours', async () => {
  assert.match(watcher('IsStatusNotifierHostRegistered'), /true/, 'a tray host is registered (swaybar)')
  const ours = trayNames()
  assert.ok(ours.length > 0, 'our StatusNotifierItem is on the bus')
  await wd.until(() => ours.some((n) => watcher('RegisteredStatusNotifierItems').includes(n)), `the host lists our item ${ours}: ${watcher('RegisteredStatusNotifierItems')}`)
  // swaybar, as the host, took the item to show it in its bar.
  const host = readFileSync(join(process.env.T, 'swaybar.log'), 'utf8')
  assert.ok(ours.some((n) => host.includes(`Registering Status Notifier Item '${n}/StatusNotifierItem'`)), host)
  assert.equal(trayCount(), 0)
})

// The positive path, as a person would take it: the notification is shown,
// its action opens the review, the compositor puts that window in front with
// the keyboard, Approve arms after the delay; focus moved away disarms it (on
// the page and in custody); back in front it re-arms and the approval signs.
test('a notification opens the review; in front it arms, focus away disarms, back in front it signs', async () => {
  // With a daemon to show the notification, the review waits for the human:
  // dunst shows it (on the Wayland output, through layer-shell), and its
  // action opens the review.
  const p = await askAndClick('c1', 5830)
  assert.match(notified(), /asks you to approve 58\.30 USD at shop\.example/, 'the Notify call on the bus')
  await wd.until(() => trayCount() === 1, 'the tray item counts the waiting request')
  await wd.switchToWindow(/review\.html#q1$/, 20_000)
  assert.equal(await wd.text(tid('cost')), '58.30 USD')
  await wd.until(() => /\(q1\)/.test(inFront()), `the review in front, with the keyboard: ${JSON.stringify(swayWindows())}`)
  await armed('approve', 'Approve armed in front, after the delay')
  await wd.screenshot(join(SHOTS, 'wayland-review.png'))
  // Keys typed on the seat's keyboard reach the window in front: Tab moves
  // the page's focus (off Deny, where the review opens it) and stays in the
  // page. Each wtype is a new keyboard on the seat, and sway 1.7 then takes
  // the keyboard focus away and gives it back ("reenter to pick up the new
  // configuration"): the window re-arms after the delay, as after any blur.
  // What Tab must not do is leave Approve off while the window is in front.
  const active = () => wd.exec(`return document.activeElement?.dataset.testid ?? document.activeElement?.tagName ?? ''`)
  assert.equal(await active(), 'deny')
  execFileSync('wtype', ['-k', 'Tab'])
  await wd.until(async () => (await active()) !== 'deny', 'Tab, typed through the seat, moving the focus within the page')
  execFileSync('wtype', ['-k', 'Tab', '-k', 'Tab', '-k', 'Tab'])
  await armed('approve', 'Approve armed again after four Tabs')
  assert.notEqual(await active(), 'BODY', 'the focus is still on a control of the page')

  // The human clicks the home window: the review loses the keyboard.
  focusWindow('^Parley Custody$')
  await wd.until(async () => (await wd.prop(tid('approve'), 'disabled')) === true, "the review's Approve off once it is not in front")
  assert.match(await wd.text(tid('approve-hint')), /not in front/)
  assert.match(await approve('q1'), /in front and focused/, 'custody refuses it too')

  // Back in front: armed again only after the delay, then Approve signs.
  focusWindow('\\(q1\\)')
  await wd.until(() => /\(q1\)/.test(inFront()), 'the review in front again')
  await wd.until(async () => /Approve in/.test(await wd.text(tid('approve-hint'))), 'the page counting down the delay')
  assert.match(await approve('q1'), /too soon|in front and focused/, 'custody: not yet')
  await armed('approve', 'Approve re-armed after the delay')
  await wd.click(tid('approve'))
  const fin = await agent.final('c1')
  assert.equal(fin.kind, 'APPROVED', JSON.stringify(fin))
  const ok = verify(fin.grant, principal, ['--svc', 'shop.example', '--verb', 'COMMIT', '--cap', 'shop.order', '--hash', p.hash, '--cost', '58.30USD', '--risk', 'medium'])
  assert.equal(ok.code, 0, ok.out)
  await wd.until(() => /Approved 58\.30 USD at shop\.example/.test(notified()), 'the approval notification', 20_000)
  await wd.until(() => trayCount() === 0, 'the tray count cleared')
})

// A second review opened while one is in front: the compositor decides
// which window has the keyboard (sway gives it to the new one, whatever the
// app asked for), and custody follows it. The window that lost it is
// disarmed at once (the new one arms after its own delay, as checked above),
// so a click meant for the first counts for neither.
test('a second review takes the focus from the first: the first disarms, on its page and in custody', async () => {
  await askAndClick('c2', 1999, 'books.example')
  await wd.switchToWindow(/review\.html#q2$/, 20_000)
  await wd.until(() => /\(q2\)/.test(inFront()), `q2 in front: ${JSON.stringify(swayWindows())}`)
  await armed('approve', "q2's Approve armed")
  const q2 = await wd.handle()

  await askAndClick('c3', 4200, 'cal.example')
  await wd.until(() => trayCount() === 2, 'the tray item counts both')
  await wd.switchToWindow(/review\.html#q3$/, 20_000)
  const windows = await wd.until(() => {
    const w = swayWindows()
    return /\(q3\)/.test(inFront()) ? w : null
  }, `q3 in front: ${JSON.stringify(swayWindows())}`)
  assert.equal(windows.filter((w) => /\(q[23]\)/.test(w.title)).length, 2, JSON.stringify(windows))
  await wd.switchTo(q2)
  await wd.until(async () => (await wd.prop(tid('approve'), 'disabled')) === true, "q2's Approve off")
  assert.match(await approve('q2'), /in front and focused/)
  await wd.click(tid('deny'))
  assert.equal((await agent.final('c2')).kind, 'DENIED')
  await wd.switchToWindow(/review\.html#q3$/)
  await armed('approve', "q3's Approve armed after its delay")
  // Esc on the seat's keyboard goes to the window in front, and denies its request.
  execFileSync('wtype', ['-k', 'Escape'])
  assert.equal((await agent.final('c3')).kind, 'DENIED')
  await wd.until(() => trayCount() === 0, 'the tray count cleared')
})
