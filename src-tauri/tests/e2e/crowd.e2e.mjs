// The UI channel keeps the real UI in: with no UI running, six connections
// to the UI socket that said hello and then nothing, and six that never say
// hello (the old channel let four keep every UI out, and gave a queued review
// window to whoever connected first), do not stop a request's review window
// from appearing in the app custody starts, and the crowd is closed within
// seconds. Its session has no notification daemon, so the review opens by itself.

import { test, after } from 'node:test'
import assert from 'node:assert/strict'
import { createConnection } from 'node:net'
import { existsSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { until } from './webdriver.mjs'
import { Agent, agentKey, proposal, consentRequest } from './agent.mjs'
import { APP, PARLEY, SOCKET, tid, wd, startApp, createKey, newestPid } from './session.mjs'

let agent

after(async () => {
  agent?.close()
  await wd.quit()
})

const UI_SOCKET = join(process.env.XDG_RUNTIME_DIR, 'parley-custody-ui', 'ui.sock')
const HELLO = `${JSON.stringify({ hello: { ui: 'parley-custody-ui', version: '0.1.0', pid: process.pid } })}\n`

/** A raw connection to the UI socket: what it was sent, and whether it was closed. */
function raw(sayHello) {
  const c = { lines: '', closed: false }
  c.sock = createConnection(UI_SOCKET)
  c.sock.on('data', (d) => (c.lines += d))
  c.sock.on('close', () => (c.closed = true))
  c.sock.on('error', () => {})
  if (sayHello) c.sock.write(HELLO)
  return c
}

test('six idle and six silent connections to the UI socket do not stop a request window appearing', async () => {
  await startApp()
  const principal = await createKey()
  // No UI running: the app ends (its WebDriver session with it).
  const ui = newestPid('parley-custody')
  await wd.quit().catch(() => {})
  try {
    process.kill(Number(ui), 'SIGKILL')
  } catch {
    /* already gone */
  }
  await until(() => !existsSync(`/proc/${ui}`) || /State:\s+Z/.test(readFileSync(`/proc/${ui}/status`, 'utf8')), 'the UI process gone')
  const idle = Array.from({ length: 6 }, () => raw(true))
  const silent = Array.from({ length: 6 }, () => raw(false))
  await until(() => idle.every((c) => c.lines.includes('"door":true')), 'the idle connections greeted as doors')
  // The app WebDriver drives is the UI custody starts for the request.
  const started = startApp(APP, { knock: false })
  await until(() => existsSync(process.env.PARLEY_E2E_HANDOFF), 'the launcher waiting for the UI custody starts', 30_000)
  agent = await Agent.connect(SOCKET)
  const p = proposal(PARLEY, { id: 'p_crowd', amount: 777 })
  agent.send(consentRequest('cc', { proposal: p, principal, agent: agentKey() }))
  await agent.pending('cc')
  await started
  await wd.switchToWindow(/review\.html#q1$/, 20_000)
  assert.equal(await wd.text(tid('cost')), '7.77 USD')
  // None of the crowd was given the window or anything else but its greeting.
  for (const c of [...idle, ...silent]) assert.ok(!c.lines.includes('review'), c.lines)
  // And the crowd is closed: no hello in 2 s, idle 5 s after it.
  await until(() => [...idle, ...silent].every((c) => c.closed), 'the crowd closed by custody', 15_000)
  await wd.click(tid('deny'))
  const fin = await agent.final('cc')
  assert.equal(fin.kind, 'DENIED', JSON.stringify(fin))
})
