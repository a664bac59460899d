// OS authentication before signing, end to end through the real app: the
// app runs as an ordinary (non-root) user with a password, next to a real
// polkitd on a real system bus (scripts/start-polkit.sh). polkit's text agent
// `pkttyagent` is registered for the app's process on a pty this test reads,
// standing in for the desktop's graphical agent. Approve is clicked by
// another X client through XTEST (xdotool), the way malware on the same
// display would: the click reaches the password prompt, never a signature.
// Only the user's password signs, and the OS prompt names the request it
// signs (service, amount, the agent's words, the hash). scripts/test-app.sh runs this file in its
// "stepup" session as user $STEPUP_USER with password $STEPUP_PASSWORD.

import { test, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { execFileSync, spawn } from 'node:child_process'
import { mkdtempSync, createReadStream } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { until } from './webdriver.mjs'
import { Agent, agentKey, proposal, consentRequest } from './agent.mjs'
import { PARLEY, SOCKET, tid, sleep, wd, startApp, createKey, verify, armed, newestPid } from './session.mjs'

const PASSWORD = process.env.STEPUP_PASSWORD
let principal
let agent
let polkitAgent
const agentPub = agentKey()

/** polkit's text agent for the app's process, on a pty (script), with its screen. */
async function startTextAgent(pid) {
  const dir = mkdtempSync(join(tmpdir(), 'pkttyagent-'))
  const fifo = join(dir, 'registered')
  execFileSync('mkfifo', [fifo])
  const child = spawn('script', ['-qfec', `exec pkttyagent --process ${pid} --notify-fd 3 3>${fifo}`, '/dev/null'], {
    stdio: ['pipe', 'pipe', 'pipe'],
  })
  const screen = { text: '' }
  child.stdout.setEncoding('utf8')
  child.stdout.on('data', (d) => (screen.text += d))
  child.stderr.setEncoding('utf8')
  child.stderr.on('data', (d) => (screen.text += d))
  // EOF on the fifo: pkttyagent is registered with polkitd.
  await new Promise((ok, fail) => {
    const r = createReadStream(fifo)
    r.on('data', () => {})
    r.on('end', ok)
    r.on('error', fail)
  })
  return { child, screen }
}

/** Where the Approve button is on the X screen: the window's origin (no
 *  window manager under Xvfb: no decorations) plus the element's rect. */
async function approveOnScreen() {
  // The review opens at its top; like a person, scroll to the button first.
  await wd.exec(`document.querySelector('[data-testid="approve"]').scrollIntoView({ block: 'center' })`)
  const win = await wd.req('GET', '/window/rect')
  const el = await wd.find(tid('approve'))
  const r = await wd.req('GET', `/element/${el}/rect`)
  return [Math.round(win.x + r.x + r.width / 2), Math.round(win.y + r.y + r.height / 2)]
}

/** A click from another X client, through XTEST. */
function synthesizedClick([x, y]) {
  execFileSync('xdotool', ['mousemove', '--sync', String(x), String(y), 'click', '1'])
}

function auditRows() {
  const out = execFileSync(PARLEY, ['audit', '--jsonl'], { encoding: 'utf8' })
  return out
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l))
}

before(async () => {
  assert.ok(SOCKET, 'PARLEY_CUSTODY_SOCKET must be set (scripts/test-app.sh does)')
  assert.ok(PASSWORD, 'STEPUP_PASSWORD must be set (scripts/test-app.sh does)')
  assert.notEqual(process.getuid(), 0, 'this test runs the app as an ordinary user (polkit asks root nothing)')
  await startApp()
  principal = await createKey('Ana (personal)')
  agent = await Agent.connect(SOCKET)
  // The OS asks on behalf of the custody service (the polkit subject), never the UI.
  polkitAgent = await startTextAgent(newestPid('parley-custodyd'))
})

after(async () => {
  agent?.close()
  polkitAgent?.child.kill()
  await wd.quit()
})

test('a synthesized click on Approve reaches the OS password prompt, never a signature; only the password signs', async () => {
  const p = proposal(PARLEY, { id: 'p_su', amount: 4200, risk: 'low' })
  agent.send(consentRequest('s1', { proposal: p, principal, agent: agentPub }))
  await agent.pending('s1')
  // No notification daemon in this session: the app opens the review itself.
  await wd.switchToWindow(/review\.html#q\d+$/)
  await wd.$(tid('approve'))
  assert.match(await wd.text(tid('step-up')), /asks for your password/, 'the review says beforehand that the OS will ask')
  const words = await wd.text(tid('agent-phrase'))
  await armed('approve', 'Approve armed')

  // Another X client clicks Approve: polkit asks for the password, nothing is signed.
  synthesizedClick(await approveOnScreen())
  await until(() => polkitAgent.screen.text.includes('Password: '), 'the OS password prompt', 20_000)
  // The OS prompt, drawn by polkit's agent and not by custody, names this request.
  const prompt = polkitAgent.screen.text
  for (const needed of ['Parley Custody will sign a consent for 42.00 USD at shop.example', `asked by agent "${words}"`, p.hash.slice(0, 8)]) {
    assert.ok(prompt.includes(needed), `the OS prompt names ${needed}: ${prompt}`)
  }
  await sleep(500)
  assert.equal(agent.frames.find((f) => f.re === 's1' && f.kind !== 'PENDING'), undefined, 'no answer while the OS asks')
  // The malware cannot answer it: a wrong password signs nothing, the request stays pending.
  polkitAgent.child.stdin.write('not-the-password\n')
  await wd.until(async () => /nothing was signed/.test(await wd.text(tid('status'))), 'the window says why nothing was signed', 30_000)
  assert.match(await wd.text(tid('status')), /OS authentication failed or was cancelled/)
  assert.equal(agent.frames.find((f) => f.re === 's1' && f.kind !== 'PENDING'), undefined, 'still pending')
  let rows = auditRows()
  assert.ok(
    rows.some((r) => r.kind === 'step_up_failed' && /refused/.test(r.reason ?? '')),
    JSON.stringify(rows.map((r) => [r.kind, r.reason])),
  )
  assert.ok(!rows.some((r) => r.kind === 'consent_approved'))

  // The human: click, then their own password. Signed, for exactly that proposal.
  const before = polkitAgent.screen.text.length
  await armed('approve', 'Approve armed again')
  synthesizedClick(await approveOnScreen())
  await until(() => polkitAgent.screen.text.slice(before).includes('Password: '), 'the OS password prompt again', 20_000)
  polkitAgent.child.stdin.write(`${PASSWORD}\n`)
  const fin = await agent.final('s1')
  assert.equal(fin.kind, 'APPROVED', JSON.stringify(fin))
  const ok = verify(fin.grant, principal, ['--svc', 'shop.example', '--verb', 'COMMIT', '--cap', 'shop.order', '--hash', p.hash, '--cost', '42.00USD', '--risk', 'low'])
  assert.equal(ok.code, 0, ok.out)
  rows = auditRows()
  const signed = rows.find((r) => r.kind === 'consent_approved')
  assert.ok(signed, 'a consent_approved row')
  assert.match(JSON.stringify(signed), /click\+os-auth/, 'the row says how the human confirmed')
})
