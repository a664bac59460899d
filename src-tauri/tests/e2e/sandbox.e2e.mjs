// The web engine in its sandbox, and review windows that never stand in
// for one another, through the real app under Xvfb.
//
// The review pages show agents' text in WebKit's web process. A flaw there
// must not reach the principal key: the web process runs in WebKitGTK's
// bubblewrap sandbox (src-tauri/src/webkit.rs), with mount and network
// namespaces (and, for a normal user, a user namespace) of its own, no
// session bus, and none of our sockets in its view. This file checks that
// from inside those namespaces (inside.py), after checking that the same
// search and connections succeed from the UI process's own namespaces, so
// it fails when the sandbox is off.
//
// scripts/test-app.sh runs it twice: as root ("sandbox") and as an
// ordinary user ("sandbox-user"), both without a notification daemon, so
// each request opens its review window by itself.

import { test, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { execFileSync } from 'node:child_process'
import { mkdirSync, readFileSync, readdirSync, readlinkSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { until } from './webdriver.mjs'
import { Agent, agentKey, proposal, consentRequest } from './agent.mjs'
import { PARLEY, SOCKET, SHOTS, tid, sleep, wd, startApp, createKey, newestPid, armed, invoke } from './session.mjs'

const here = dirname(fileURLToPath(import.meta.url))
const runtime = process.env.XDG_RUNTIME_DIR
const UI_SOCKET = join(runtime, 'parley-custody-ui', 'ui.sock')
// The keychain entry custody keeps the principal key under (custody/src/keystore: service.namespace).
const SERVICE = `parley-custody.${process.env.PARLEY_CUSTODY_NAMESPACE}`

let agent
let principal

before(async () => {
  assert.ok(SOCKET && runtime, 'scripts/test-app.sh sets PARLEY_CUSTODY_SOCKET and XDG_RUNTIME_DIR')
  await startApp()
  principal = await createKey()
  agent = await Agent.connect(SOCKET)
})

after(async () => {
  agent?.close()
  await wd.quit()
})

/** The pids of the WebKitWebProcesses descended from `root`. */
function webProcesses(root) {
  const parent = new Map()
  const program = new Map()
  for (const d of readdirSync('/proc')) {
    if (!/^\d+$/.test(d)) continue
    try {
      const stat = readFileSync(`/proc/${d}/stat`, 'utf8')
      parent.set(d, stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1])
      program.set(d, readFileSync(`/proc/${d}/cmdline`, 'utf8').split('\0')[0].split('/').at(-1))
    } catch {
      // gone meanwhile
    }
  }
  const descends = (pid) => {
    for (let p = pid, i = 0; p && p !== '0' && i < 64; p = parent.get(p), i++) if (p === root) return true
    return false
  }
  return [...program].filter(([pid, name]) => name === 'WebKitWebProcess' && descends(pid)).map(([pid]) => pid)
}

const ns = (pid, name) => readlinkSync(`/proc/${pid}/ns/${name}`)

/** inside.py: the search and the connections from inside `pid`'s namespaces. */
function inside(pid, sockets) {
  const out = execFileSync('python3', [join(here, 'inside.py'), pid, '/usr/bin/secret-tool', SERVICE, process.env.DBUS_SESSION_BUS_ADDRESS, ...sockets], {
    encoding: 'utf8',
    timeout: 30_000,
  })
  return JSON.parse(out)
}

test('web_process_sandbox_keeps_the_key_the_bus_and_our_sockets_out_of_reach', async () => {
  const ui = newestPid('parley-custody')
  const webs = webProcesses(ui)
  assert.ok(webs.length >= 1, `the UI process ${ui} has a web process`)
  // An abstract session bus is reachable from any process in the same network namespace.
  const bus = process.env.DBUS_SESSION_BUS_ADDRESS
  const abstract = /unix:abstract=([^,;]+)/.exec(bus)?.[1]
  const sockets = [UI_SOCKET, SOCKET, ...(abstract ? [`@${abstract}`] : [])]

  // The control: from the UI process's own namespaces the key is found and
  // every socket answers, so what fails below fails because of the sandbox.
  const open = inside(ui, sockets)
  assert.deepEqual(open.entered, [])
  assert.equal(open.real_bus.code, 0, JSON.stringify(open))
  assert.match(open.real_bus.out, new RegExp(`attribute.service = ${SERVICE.replace(/\./g, '\\.')}`), 'the principal key is in the keychain')
  for (const s of sockets) assert.equal(open.sockets[s], 'connected', s)

  for (const web of webs) {
    for (const name of ['mnt', 'net', ...(process.getuid() === 0 ? [] : ['user'])]) {
      assert.notEqual(ns(web, name), ns(ui, name), `the web process ${web} has its own ${name} namespace`)
    }
    if (process.getuid() === 0) {
      // Root: bubblewrap makes no user namespace (it needs none to mount); said in the log.
      assert.equal(ns(web, 'user'), ns(ui, 'user'))
    }
    const env = readFileSync(`/proc/${web}/environ`, 'utf8').split('\0')
    assert.deepEqual(env.filter((e) => e.startsWith('DBUS_SESSION_BUS_ADDRESS=')), [], 'no session bus address')

    // Of the user's cache directory (which WebKit binds writable), it sees only the app's own
    // folder, not another program's (made now: a bind of the whole directory would show it).
    const cache = process.env.XDG_CACHE_HOME
    mkdirSync(join(cache, 'another-program'), { recursive: true })
    assert.deepEqual(readdirSync(`/proc/${web}/root${cache}`), ['parley-custody'], `what the web process sees of ${cache}`)

    const seen = inside(web, sockets)
    assert.ok(seen.entered.includes('mnt') && seen.entered.includes('net'), JSON.stringify(seen.entered))
    for (const [how, r] of [['its own environment', seen.own_env], ['the real session bus address', seen.real_bus]]) {
      assert.notEqual(r.code, 0, `a Secret Service search with ${how} fails: ${JSON.stringify(r)}`)
      assert.doesNotMatch(r.out, /attribute\.|secret = /, how)
    }
    for (const s of sockets) assert.notEqual(seen.sockets[s], 'connected', `${s} cannot be reached: ${seen.sockets[s]}`)
  }
  // Nothing refused: the home window is still there.
  assert.match(await wd.url(), /^tauri:\/\/localhost/)
})

/** The title of the topmost request window (titled "… (qN) — Parley Custody") at screen point
 *  [x, y], as another X client sees it (no window manager: the top-level windows are the root's
 *  children, listed by xwininfo bottom to top). The home window is left out: WebDriver raises
 *  each window it switches to, the home window included, which no person's click would. */
function windowAt([x, y]) {
  const out = execFileSync('xwininfo', ['-root', '-children'], { encoding: 'utf8' })
  let found = ''
  for (const line of out.split('\n')) {
    const m = /^\s+0x[0-9a-f]+ "(.*)": .* (\d+)x(\d+)\+(-?\d+)\+(-?\d+)\s+\+-?\d+\+-?\d+$/.exec(line)
    if (!m || !/\(q\d+\) — Parley Custody$/.test(m[1])) continue
    const [w, h, left, top] = m.slice(2).map(Number)
    if (x >= left && x < left + w && y >= top && y < top + h) found = m[1]
  }
  return found
}

/** The titles of every top-level window that says it is ours. */
function ourTitles() {
  let out = ''
  try {
    out = execFileSync('xdotool', ['search', '--name', 'Parley Custody'], { encoding: 'utf8' })
  } catch {
    return []
  }
  return out.split('\n').filter(Boolean).map((id) => execFileSync('xdotool', ['getwindowname', id], { encoding: 'utf8' }).trim())
}

/** Where the Approve button of the current window is on the X screen (no window manager: no decorations). */
async function approveOnScreen() {
  await wd.exec(`document.querySelector('[data-testid="approve"]').scrollIntoView({ block: 'center' })`)
  const win = await wd.req('GET', '/window/rect')
  const el = await wd.find(tid('approve'))
  const r = await wd.req('GET', `/element/${el}/rect`)
  return { win, at: [Math.round(win.x + r.x + r.width / 2), Math.round(win.y + r.y + r.height / 2)] }
}

// Under Xvfb there is no window manager: the X focus follows the pointer,
// which starts at the screen's centre, over the first review window (it
// opens centred). A second window opened over it would take the focus
// (and A's Approve would disarm); opened beside it, A keeps it.
test('a_second_review_window_opens_beside_the_first_unfocused_and_titled_after_its_request', async () => {
  const me = agentKey()
  const send = (id, amount, service) => {
    const p = proposal(PARLEY, { id: `p_${id}`, amount })
    agent.send(consentRequest(id, { proposal: p, principal, agent: me, service }))
    return agent.pending(id)
  }
  await send('w1', 5830, 'shop.example')
  const a = await wd.switchToWindow(/review\.html#q1$/, 20_000)
  await wd.$(tid('approve'))
  await until(() => ourTitles().some((t) => t.startsWith('Approve 58.30 USD at shop.example? (q1)')), 'A titled after its request')
  await armed('approve', "A's Approve armed")
  const first = await approveOnScreen()
  if (process.getuid() === 0) {
    // target/screenshots is root's (the ordinary user's session writes none).
    mkdirSync(SHOTS, { recursive: true })
    await wd.screenshot(join(SHOTS, 'review-sandboxed.png'))
  }

  await send('w2', 1999, 'books.example')
  await wd.switchToWindow(/review\.html#q2$/, 20_000)
  await wd.$(tid('approve'))
  const second = await wd.req('GET', '/window/rect')
  const titles = await until(() => {
    const t = ourTitles()
    return t.some((x) => x.startsWith('Approve 19.99 USD at books.example? (q2)')) ? t : null
  }, 'B titled after its request')
  assert.ok(titles.some((t) => t.startsWith('Approve 58.30 USD at shop.example? (q1)')), JSON.stringify(titles))

  // B is not where A is, and covers none of A.
  const apart = (r, s) => r.x + r.width <= s.x || s.x + s.width <= r.x || r.y + r.height <= s.y || s.y + s.height <= r.y
  assert.ok(apart(first.win, second), `B ${JSON.stringify(second)} beside A ${JSON.stringify(first.win)}`)
  // B never had the focus: for custody it is not in front, however long it
  // has been on screen (past the arming delay), so an approval from it is
  // refused by the service itself, not only by B's page.
  await sleep(2000)
  const fromB = await invoke('review_decide', { id: 'q2', approve: true, confirmed: false, gesture: 'click', reason: null })
  assert.match(fromB, /in front and focused/, fromB)
  // A kept the focus: its Approve is still armed (a blur disarms it) ...
  await wd.switchTo(a)
  assert.equal(await wd.prop(tid('approve'), 'disabled'), false, "A's Approve is still armed")
  const again = await approveOnScreen()
  assert.deepEqual(again.at, first.at, "A's Approve did not move")
  // ... the X window at A's Approve is A ...
  assert.match(windowAt(first.at), /^Approve 58\.30 USD at shop\.example\? \(q1\)/, `the request window under A's Approve ${first.at} is A`)
  // ... and for custody, an approval from A still counts as made in front
  // (what follows is step-up: as root polkit lets it through, as a user
  // without an authentication agent it cannot ask, either way not a focus refusal).
  const said = await invoke('review_decide', { id: 'q1', approve: true, confirmed: false, gesture: 'click', reason: null })
  assert.doesNotMatch(said, /in front and focused|too soon/, said)
  if (process.getuid() === 0) {
    assert.equal(said, 'accepted')
    assert.equal((await agent.final('w1')).kind, 'APPROVED')
  } else {
    await wd.click(tid('deny'))
    assert.equal((await agent.final('w1')).kind, 'DENIED')
  }
  await wd.switchToWindow(/review\.html#q2$/)
  await wd.click(tid('deny'))
  assert.equal((await agent.final('w2')).kind, 'DENIED')
})
