// The session's lock (issue 30, item 2) in the real app: a review window
// open and armed is disarmed when the session locks (the tests' own login1,
// custody/examples/fake_login1.rs, on this session's bus: LockedHint and its
// PropertiesChanged), custody itself refuses an approval from it meanwhile,
// and after unlock it waits the whole arming delay again. The tray menu and
// home say while the screen is locked that nothing is approved meanwhile.
// No notification daemon in this session: the review opens by itself.

import { test, after } from 'node:test'
import assert from 'node:assert/strict'
import { appendFileSync, readFileSync } from 'node:fs'
import { until } from './webdriver.mjs'
import { Agent, agentKey, proposal, consentRequest } from './agent.mjs'
import { PARLEY, SOCKET, tid, wd, startApp, createKey, armed, invoke, main } from './session.mjs'
import { trayItems } from './tray.mjs'

let agent

after(async () => {
  agent?.close()
  await wd.quit()
})

/** Tells the tests' login1 to `lock`, `unlock`, …; waits until it did. */
async function login1(cmd) {
  const log = process.env.LOGIN1_CTL.replace(/login1\.ctl$/, 'login1.log')
  const before = readFileSync(log, 'utf8').split(`ok ${cmd}`).length
  appendFileSync(process.env.LOGIN1_CTL, `${cmd}\n`)
  await until(() => readFileSync(log, 'utf8').split(`ok ${cmd}`).length > before, `login1: ${cmd}`)
}

test('a review window is disarmed while the session is locked and armed from the start after unlock', async () => {
  await startApp()
  const principal = await createKey()
  agent = await Agent.connect(SOCKET)
  const p = proposal(PARLEY, { id: 'p_lock', amount: 4200 })
  agent.send(consentRequest('lk', { proposal: p, principal, agent: agentKey() }))
  await agent.pending('lk')
  await wd.switchToWindow(/review\.html#q1$/, 20_000)
  await armed('approve', 'Approve armed before the lock')

  await login1('lock')
  await until(async () => (await wd.text(tid('approve-hint'))) === 'Approve is off while the screen is locked.', 'the review says it is off while locked')
  assert.equal(await wd.prop(tid('approve'), 'disabled'), true)
  // Custody refuses it itself, whatever the page shows.
  const refused = await invoke('review_decide', { id: 'q1', approve: true, confirmed: true, gesture: 'click' })
  assert.match(refused, /^refused: Approve is off while the screen is locked/)
  // The tray menu (read as a tray host reads it) and home say so too.
  const LOCKED = 'Screen locked: approving and issuing are off until you unlock it'
  await until(() => trayItems().some(([, l]) => l === LOCKED), 'the tray menu says the screen is locked')
  const homeSays = async () => {
    await wd.switchTo(main)
    return wd.exec(`return document.querySelector('[data-testid="session-held"]')?.textContent ?? ''`)
  }
  await until(async () => /^The screen is locked: approving and issuing are off/.test(await homeSays()), 'home says the screen is locked')
  await wd.switchToWindow(/review\.html#q1$/)

  const t0 = Date.now()
  await login1('unlock')
  await until(async () => /^Approve in /.test(await wd.text(tid('approve-hint'))), 'the delay again after unlock')
  await armed('approve', 'Approve armed again after the whole delay')
  assert.ok(Date.now() - t0 >= 1400, `armed ${Date.now() - t0} ms after unlock`)
  await wd.click(tid('deny'))
  const fin = await agent.final('lk')
  assert.equal(fin.kind, 'DENIED', JSON.stringify(fin))
  // Unlocked: neither says it any more.
  assert.ok(!trayItems().some(([, l]) => l === LOCKED), 'the tray line is gone after unlock')
  await until(async () => (await homeSays()) === '', 'home no longer says the screen is locked')
})
