// A new user's whole story on a small screen (issue 28's walk-through):
// first run, a purchase review, Approve, a grant request narrowed in the
// form, the audit view, settings, Deny and pause, Stop all agents. On
// every window: nothing wider than the window (no horizontal scroll), the
// window inside the screen, and in a review Deny and Approve inside the
// view without scrolling. A screenshot of each step lands in
// $SCREENSHOTS/walk-<width>x<height>-<step>.png for a person to look at.
// scripts/test-app.sh runs it on a 1024×600 X screen (session
// `walkthrough`); E2E_ONLY=walkthrough-1366 runs it on 1366×768.

import { test, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { join } from 'node:path'
import { Agent, agentKey, proposal, consentRequest } from './agent.mjs'
import { PARLEY, SOCKET, SHOTS, tid, wd, main, startApp, createKey, openNewestReview, openGrantForm, armed, closeByButton } from './session.mjs'

let principal
let agent
const agentPub = agentKey()
let size = ''

/** The screenshot of the current window, named after the screen and the step. */
const shot = (step) => wd.screenshot(join(SHOTS, `walk-${size}-${step}.png`))

/** Nothing wider than the window; the window inside the screen. */
async function fits(what) {
  const m = await wd.exec(`return { sw: document.documentElement.scrollWidth, cw: document.documentElement.clientWidth, x: screenX, y: screenY, ow: outerWidth, oh: outerHeight, aw: screen.width, ah: screen.height }`)
  assert.ok(m.sw <= m.cw, `${what}: no horizontal scroll (${m.sw} > ${m.cw})`)
  assert.ok(m.x >= 0 && m.y >= 0 && m.x + m.ow <= m.aw && m.y + m.oh <= m.ah, `${what}: the window inside the ${m.aw}×${m.ah} screen: ${JSON.stringify(m)}`)
}

/** Deny and Approve inside the review's view, as they are (no scrolling). */
async function decisionsInView() {
  const r = await wd.exec(`const v = { w: innerWidth, h: innerHeight }; return [v, ...['deny', 'approve'].map((t) => { const b = document.querySelector('[data-testid="' + t + '"]').getBoundingClientRect(); return { t, top: b.top, bottom: b.bottom, left: b.left, right: b.right } })]`)
  const [v, ...buttons] = r
  for (const b of buttons) assert.ok(b.top >= 0 && b.left >= 0 && b.bottom <= v.h && b.right <= v.w, `${b.t} inside the ${v.w}×${v.h} view: ${JSON.stringify(b)}`)
}

async function home() {
  await wd.switchTo(main)
  if (!(await wd.exec(`return !!document.querySelector('[data-testid="pending-section"]')`))) await wd.click(tid('open-home'))
  await wd.$(tid('freeze'))
}

before(async () => {
  await startApp()
  size = await wd.exec(`return screen.width + 'x' + screen.height`)
})

after(async () => {
  agent?.close()
  await wd.quit()
})

test('first run: the offer to create a key fits the screen', async () => {
  await wd.$(tid('welcome'))
  await fits('first run')
  await shot('1-first-run')
  principal = await createKey('Ana (personal)')
  agent = await Agent.connect(SOCKET)
})

test('a purchase: its review fits, Deny and Approve in view; Approve signs', async () => {
  const p = proposal(PARLEY, { id: 'w_1', amount: 5830 })
  agent.send(consentRequest('w1', { proposal: p, principal, agent: agentPub }))
  await agent.pending('w1')
  await openNewestReview()
  await fits('review')
  await decisionsInView()
  await shot('2-review')
  await armed('approve', 'Approve armed')
  await wd.click(tid('approve'))
  const fin = await agent.final('w1')
  assert.equal(fin.kind, 'APPROVED', JSON.stringify(fin))
  await wd.until(async () => /Approved/.test(await wd.text(tid('status'))), 'the result in the window').catch(() => {})
  await shot('3-approved')
  await wd.until(async () => (await wd.handles()).length === 1, 'the review closed after its result')
})

test('a grant request, narrowed in the form; its agent by name', async () => {
  const exp = Math.floor(Date.now() / 1000) + 86400
  agent.send({ custody: 1, id: 'w2', op: 'grant', agent: agentPub, reason: 'weekly groceries', caveats: [{ svc: ['shop.example'] }, { verbs: ['ASK', 'INTENT', 'COMMIT'] }, { per: { max: 4000, currency: 'USD' } }, { exp }] })
  await agent.pending('w2')
  await openNewestReview()
  await fits('grant review')
  await decisionsInView()
  await shot('4-grant-review')
  const words = await wd.text(tid('agent-phrase'))
  await openGrantForm()
  await fits('grant form')
  assert.equal(await wd.text(tid('request-agent')), words)
  await wd.type('#spend', '100')
  await wd.click('#exp-8h')
  await wd.type('#agent-label', 'groceries bot')
  await shot('5-grant-form')
  await armed('issue', 'Issue armed')
  await wd.click(tid('issue'))
  const fin = await agent.final('w2')
  assert.equal(fin.kind, 'ISSUED', JSON.stringify(fin))
  await closeByButton('cancel')
  await wd.until(async () => (await wd.handles()).length === 1, 'the form’s window closed')
})

test('the audit view and settings fit', async () => {
  await home()
  await wd.click(tid('open-audit'))
  await wd.switchToWindow(/audit\.html$/)
  await wd.$(tid('event-row'))
  await wd.$(tid('live-row'))
  await fits('audit')
  await shot('6-audit')
  await home()
  await wd.click(tid('open-settings'))
  await wd.switchToWindow(/settings\.html$/)
  await wd.$(tid('keys'))
  await fits('settings')
  await shot('7-settings')
})

test('deny and pause, then stop all agents', async () => {
  await home()
  const p = proposal(PARLEY, { id: 'w_3', amount: 120000, risk: 'high' })
  agent.send(consentRequest('w3', { proposal: p, principal, agent: agentPub }))
  await agent.pending('w3')
  await openNewestReview()
  await decisionsInView()
  await wd.$(tid('deny-pause'))
  await shot('8-review-named')
  await wd.click(tid('deny-pause'))
  const fin = await agent.final('w3')
  assert.equal(fin.kind, 'DENIED', JSON.stringify(fin))
  await wd.until(async () => (await wd.handles()).length === 1, 'the review closed after its result')
  await home()
  await wd.click(tid('stop-all'))
  await wd.$(tid('frozen'))
  await fits('home, frozen')
  await shot('9-frozen')
})
