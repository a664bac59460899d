// The real app in a desktop session with no notification daemon (and a bus
// that starts none on demand): it still works — each new request opens its
// review window by itself — and it says so, once, in the home window.

import { test, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { existsSync, readFileSync, statSync } from 'node:fs'
import { join } from 'node:path'
import { until, KEY } from './webdriver.mjs'
import { Agent, agentKey, proposal, consentRequest } from './agent.mjs'
import { APP, PARLEY, SOCKET, tid, sleep, wd, main, startApp, createKey, openReview, armed, invoke, newestPid } from './session.mjs'

let agent
let principal

before(async () => {
  await startApp()
})

after(async () => {
  agent?.close()
  await wd.quit()
})

test('without a notification daemon, requests open their review window and the app says so once', async () => {
  principal = await createKey()
  agent = await Agent.connect(SOCKET)
  const me = agentKey()
  for (const [i, amount] of [[1, 1999], [2, 2999]]) {
    const p = proposal(PARLEY, { id: `p_${i}`, amount })
    agent.send(consentRequest(`c${i}`, { proposal: p, principal, agent: me }))
    await agent.pending(`c${i}`)
    // Nobody clicked anything: the window is there.
    await wd.switchToWindow(new RegExp(`review\\.html#q${i}$`), 20_000)
    assert.equal(await wd.text(tid('cost')), `${(amount / 100).toFixed(2)} USD`)
    await wd.click(tid('deny'))
    const fin = await agent.final(`c${i}`)
    assert.equal(fin.kind, 'DENIED')
    await wd.switchTo(main)
    const banners = await wd.until(async () => {
      const b = await wd.exec(`return [...document.querySelectorAll('[data-testid="no-notifications"]')].map(e => e.textContent)`)
      return b.length ? b : null
    }, 'the notice in the home window')
    assert.equal(banners.length, 1, 'said once')
    assert.match(banners[0], /Desktop notifications are not available .*still works/)
  }
})

// The attack: a request opens a focused review window under the human's
// typing (no notification daemon, so nothing else announces it). Whatever
// they type next, Tab then Space or Enter, must never approve it.
test('tab_and_space_in_the_review_window_do_not_approve', async () => {
  const me = agentKey()
  const p = proposal(PARLEY, { id: 'p_tab', amount: 4999 })
  agent.send(consentRequest('c3', { proposal: p, principal, agent: me }))
  await agent.pending('c3')
  await wd.switchToWindow(/review\.html#q3$/, 20_000)
  await armed('approve', 'Approve armed')
  const active = () => wd.exec(`return document.activeElement?.dataset.testid ?? document.activeElement?.id ?? ''`)
  const reached = []
  for (let i = 0; i < 8; i++) {
    await wd.keys(KEY.Tab)
    const at = await active()
    reached.push(at)
    // Space or Enter on Deny, or on Deny and pause, denies (rightly): press them everywhere else.
    if (at !== 'deny' && at !== 'deny-pause') await wd.keys(KEY.Space, KEY.Enter)
  }
  assert.ok(!reached.includes('approve'), `Tab never lands on Approve: ${reached}`)
  // Focused on purpose, Approve still ignores the keys.
  await armed('approve', 'Approve armed again')
  await wd.exec(`document.querySelector('[data-testid="approve"]').focus()`)
  assert.equal(await active(), 'approve')
  await wd.keys(KEY.Space, KEY.Enter, KEY.Space)
  // The backend refuses an approval that no pointer made, even from this window.
  const id = 'q3'
  const refused = await invoke('review_decide', { id, approve: true, confirmed: false, gesture: null, reason: null })
  assert.match(refused, /keyboard alone cannot approve/, refused)
  await sleep(500)
  assert.ok(!agent.frames.some((f) => f.re === 'c3' && f.kind !== 'PENDING'), `nothing decided yet: ${JSON.stringify(agent.frames)}`)
  // A pointer click does approve.
  await wd.click(tid('approve'))
  const fin = await agent.final('c3')
  assert.equal(fin.kind, 'APPROVED', JSON.stringify(fin))
  await wd.switchTo(main)
})

// The split: the windows are a separate, keyless process. Killed mid-review
// (as a crash of the browser engine would), it takes nothing with it:
// nothing is signed, the request still waits in the service, and a new UI
// picks it up and can decide it.
test('the UI process killed mid-review signs nothing, and a new UI picks the request up', async () => {
  const me = agentKey()
  const p = proposal(PARLEY, { id: 'p_kill', amount: 1234 })
  agent.send(consentRequest('ck', { proposal: p, principal, agent: me }))
  await agent.pending('ck')
  // Custody numbers requests q1, q2, …: this file's fourth.
  const id = 'q4'
  await wd.switchToWindow(/review\.html#q4$/, 20_000)
  await armed('approve', 'Approve armed')
  const ui = newestPid('parley-custody')
  const service = newestPid('parley-custodyd')
  assert.notEqual(ui, service)
  process.kill(Number(ui), 'SIGKILL')
  await until(() => !existsSync(`/proc/${ui}`) || /State:\s+Z/.test(readFileSync(`/proc/${ui}/status`, 'utf8')), 'the UI process gone')
  await sleep(1500)
  assert.equal(agent.frames.find((f) => f.re === 'ck' && f.kind !== 'PENDING'), undefined, 'nothing decided')
  assert.ok(existsSync(`/proc/${service}`), 'the service runs on')
  await wd.quit().catch(() => {})
  await startApp()
  await openReview(id)
  assert.equal(await wd.text(tid('cost')), '12.34 USD')
  await armed('approve', 'Approve armed in the new UI')
  await wd.click(tid('approve'))
  const fin = await agent.final('ck')
  assert.equal(fin.kind, 'APPROVED', JSON.stringify(fin))
  await wd.switchTo(main)
})

test('settings: a limit that needs a restart says so, Restart applies it, and a second start does not run twice', async () => {
  await wd.switchTo(main)
  await wd.click(tid('open-settings'))
  await wd.switchToWindow(/settings\.html$/)
  await wd.type(tid('s-rate'), '2')
  await wd.click(tid('s-save'))
  await wd.$(tid('s-restart'))
  assert.match(await wd.text(tid('s-status')), /after a restart of the socket: rate limit/)
  const saved = JSON.parse(readFileSync(join(process.env.PARLEY_CUSTODY_DATA, 'settings.json'), 'utf8'))
  assert.equal(saved.rate_per_minute, 2)
  agent.close()
  // The click restarts the custody service, and with it ends this UI (and the WebDriver session's
  // window): an error is expected. The new service makes a new socket file.
  // A new file, not the old one: the inode alone may be reused at once, its change time is not.
  const fileId = () => {
    try {
      const st = statSync(SOCKET)
      return `${st.ino}:${st.ctimeMs}`
    } catch {
      return null
    }
  }
  const before = fileId()
  await wd.click(tid('s-restart')).catch(() => {})
  await until(() => ![null, before].includes(fileId()), 'the restarted service on a new socket', 30_000)
  // The app is now a new process (outside the WebDriver session): reach it over its socket.
  const fresh = await until(async () => {
    const a = await Agent.connect(SOCKET)
    a.send({ custody: 1, id: 'h', op: 'hello' })
    const h = await a.final('h', 2000)
    return h.kind === 'HELLO' ? a : null
  }, 'the restarted app on its socket', 30_000)
  try {
    const replies = []
    for (const i of [1, 2, 3]) {
      fresh.send({ custody: 1, id: `r${i}`, op: 'grant', agent: 'not-a-key', caveats: [] })
      const f = await fresh.final(`r${i}`)
      replies.push(f.code ? `${f.kind} ${f.code}` : f.kind)
    }
    assert.deepEqual(replies, ['REJECTED agent_key', 'REJECTED agent_key', 'ERROR rate_limited'], 'the new limit (2 a minute) is in force')
    // A second start does not run a second custody: it hands over to this one and exits.
    const second = spawn(APP, [], { stdio: 'ignore' })
    const code = await new Promise((r) => second.on('exit', (c) => r(c)))
    assert.equal(code, 0)
    fresh.send({ custody: 1, id: 'h2', op: 'hello' })
    assert.equal((await fresh.final('h2')).kind, 'HELLO', 'the first one still serves')
  } finally {
    fresh.close()
  }
})
