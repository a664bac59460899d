// Stopping an agent (issue 15, part 4) and what is unusual (part 3), end to
// end through the real app: a real agent on the real socket builds a little
// history, the review warns about a cost 10× that history and about a
// look-alike service id, then the human presses "Deny and pause this agent
// for 1 hour" and the agent's next request is refused unseen
// (`REJECTED agent_paused`): no review window, no notification. Resuming it
// in the audit view lets it ask again; "Pause <agent>" in the tray menu
// (clicked through the menu's own D-Bus interface, com.canonical.dbusmenu,
// as a tray host would) stops another. scripts/test-app.sh runs it in its
// own session, with dunst as the notification daemon.

import { test, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { join } from 'node:path'
import { agentKey, proposal, consentRequest } from './agent.mjs'
import { trayClick, trayItems } from './tray.mjs'
import { PARLEY, SHOTS, tid, sleep, wd, main, startWithAgent, listed, openReview, armed, invoke, notified } from './session.mjs'

let principal
let agent
const agentPub = agentKey()

/** How many times the app asked the notification daemon to show something. */
function notifications() {
  return (notified().match(/member=Notify\b/g) ?? []).length
}

/** Sends a consent request and opens its review window from the home window. */
async function ask(id, p, service) {
  const before = await listed()
  agent.send(consentRequest(id, { proposal: p, principal, agent: agentPub, service }))
  await agent.pending(id)
  const rid = await wd.until(async () => (await listed()).find((r) => !before.includes(r)) ?? null, `request ${id} in the home window`)
  await openReview(rid)
  return rid
}

async function closed() {
  await wd.until(async () => (await wd.handles()).length === 1, 'the review window closed')
  await wd.switchTo(main)
}

before(async () => {
  ;({ principal, agent } = await startWithAgent('Ana (personal)'))
})

after(async () => {
  agent?.close()
  await wd.quit()
})

test('history: one approved 10.00 USD order at shop.example', async () => {
  await ask('c1', proposal(PARLEY, { id: 'p_1', amount: 1000 }))
  assert.equal(await wd.text(tid('cost')), '10.00 USD')
  // A key custody never heard of: its four words, and the first-request warning.
  assert.match(await wd.text(tid('agent-phrase')), /^[a-z]+ [a-z]+ [a-z]+ [a-z]+$/)
  assert.match(await wd.text(tid('warnings')), /First request from this agent/)
  await armed('approve', 'Approve after the delay')
  await wd.click(tid('approve'))
  const fin = await agent.final('c1')
  assert.equal(fin.kind, 'APPROVED', JSON.stringify(fin))
  await closed()
})

test('unusual: a cost 10× the agent’s history at the service is a warning above the facts', async () => {
  await ask('c2', proposal(PARLEY, { id: 'p_2', amount: 10000 }))
  assert.equal(await wd.text(tid('cost')), '100.00 USD')
  const warnings = await wd.text(tid('warnings'))
  assert.match(warnings, /Costs 100\.00 USD, 10× this agent's largest at shop\.example \(10\.00 USD\)\./, warnings)
  await wd.screenshot(join(SHOTS, 'review-cost-far-above.png'))
  await wd.click(tid('deny'))
  assert.equal((await agent.final('c2')).kind, 'DENIED')
  await closed()
})

test('unusual: a service id confusable with one used before is named as a look-alike', async () => {
  await ask('c3', proposal(PARLEY, { id: 'p_3', amount: 500 }), 'shop.examp1e')
  assert.equal(await wd.text(tid('service')), 'shop.examp1e')
  const warnings = await wd.text(tid('warnings'))
  assert.match(warnings, /Look-alike service id: shop\.examp1e looks like shop\.example, which you have used before\./, warnings)
  await wd.click(tid('deny'))
  assert.equal((await agent.final('c3')).kind, 'DENIED')
  await closed()
})

test('alike: three orders from the agent at one service are listed in one review and denied at once', async () => {
  await ask('c4a', proposal(PARLEY, { id: 'p_4a', amount: 600 }))
  // Named from its review: custody keeps the name, and the review shows it.
  await wd.exec(`document.querySelector('[data-testid="agent-naming"]').open = true`)
  await wd.type(tid('agent-name'), 'shopping bot')
  await wd.click(tid('agent-name-save'))
  await wd.until(async () => /Saved/.test(await wd.text(tid('agent-name-status'))), 'the name saved')
  for (const n of ['b', 'c']) {
    agent.send(consentRequest(`c4${n}`, { proposal: proposal(PARLEY, { id: `p_4${n}`, amount: 700 }), principal, agent: agentPub }))
    await agent.pending(`c4${n}`)
  }
  await wd.until(async () => (await wd.exec(`return document.querySelectorAll('[data-testid="alike-item"]').length`)) === 2, 'the two alike requests listed')
  assert.equal(await wd.text(tid('deny-alike')), 'Deny this and the 2 alike')
  await wd.screenshot(join(SHOTS, 'review-alike.png'))
  await wd.click(tid('deny-alike'))
  for (const id of ['c4a', 'c4b', 'c4c']) assert.equal((await agent.final(id)).kind, 'DENIED', id)
  // The agents may hear before the page does: wait for the page's own line.
  await wd.until(async () => /^Denied 3 requests/.test(await wd.text(tid('status'))), 'the page says all three were denied')
  await closed()
  assert.deepEqual(await listed(), [], 'nothing left waiting')
})

test('deny and pause: the agent is told, and its next request is refused unseen', async () => {
  await ask('c4', proposal(PARLEY, { id: 'p_4', amount: 700 }))
  const button = await wd.text(tid('deny-pause'))
  assert.equal(button, 'Deny and pause agent 1 h')
  assert.equal(await wd.exec(`return document.activeElement.dataset.testid`), 'deny', 'Deny stays the default')
  await wd.screenshot(join(SHOTS, 'review-deny-and-pause.png'))
  // Each window may call only what it needs: a review cannot pause agents at
  // will, the home window cannot deny and pause.
  for (const [cmd, args] of [['agent_pause', { agent: agentPub, secs: null }], ['agent_resume', { agent: agentPub }]]) {
    assert.match(await invoke(cmd, args), /may not do that/, `${cmd} from a review window`)
  }
  const review = await wd.handle()
  await wd.switchTo(main)
  const rid = (await listed())[0]
  assert.match(await invoke('review_deny_and_pause', { id: rid }), /may not do that/, 'from the home window')
  await wd.switchTo(review)
  await wd.click(tid('deny-pause'))
  const fin = await agent.final('c4')
  assert.equal(fin.kind, 'DENIED', JSON.stringify(fin))
  assert.match(fin.reason ?? '', /paused for 1h/, JSON.stringify(fin))
  assert.match(await wd.text(tid('status')), /^Denied, and this agent is paused for 1h/)
  await closed()

  // The next request: refused at once, never queued, never shown.
  const shown = notifications()
  assert.ok(shown >= 4, `every request shown so far was notified (${shown}), so a new one would be seen`)
  const waiting = await listed()
  agent.send(consentRequest('c5', { proposal: proposal(PARLEY, { id: 'p_5', amount: 700 }), principal, agent: agentPub }))
  const refused = await agent.final('c5', 10_000)
  assert.deepEqual([refused.kind, refused.code], ['REJECTED', 'agent_paused'], JSON.stringify(refused))
  assert.match(refused.message, /paused this agent until .*refused without being shown/, refused.message)
  assert.ok(!agent.frames.some((f) => f.re === 'c5'), 'no PENDING either')
  // Give a window or a notification the time to appear if one were coming.
  await sleep(2000)
  assert.equal((await wd.handles()).length, 1, 'no review window opened')
  assert.deepEqual(await listed(), waiting, 'nothing new waiting')
  assert.equal(notifications(), shown, 'no notification')
  // Another agent is not affected.
  const other = agentKey()
  agent.send(consentRequest('c6', { proposal: proposal(PARLEY, { id: 'p_6', amount: 700 }), principal, agent: other }))
  await agent.pending('c6')
  await wd.until(async () => (await listed()).length === waiting.length + 1, 'the other agent’s request waits')
  agent.send({ custody: 1, id: 'x6', op: 'cancel', request: 'c6' })
  await wd.until(async () => (await listed()).length === waiting.length, 'withdrawn')
})

test('audit view: the paused agent is listed until when and why; Resume lets it ask again', async () => {
  await wd.switchTo(main)
  await wd.click(tid('open-audit'))
  await wd.switchToWindow(/audit\.html$/)
  await wd.$(tid('paused-row'))
  const rows = await wd.exec(`return [...document.querySelectorAll('[data-testid="paused-row"]')].map(r => [r.dataset.agent, r.textContent])`)
  assert.equal(rows.length, 1, JSON.stringify(rows))
  assert.equal(rows[0][0], agentPub)
  assert.match(rows[0][1], /denied and paused for 1h/)
  assert.match(rows[0][1], /\(in (1h|59m|58m)/)
  // The paused list and the event list are two calls: the rows may come a moment later.
  await wd.until(async () => (await wd.exec(`return [...document.querySelectorAll('[data-testid="event-row"]')].map(r => r.dataset.kind)`)).includes('agent_paused'), 'the pause in the log')
  await wd.screenshot(join(SHOTS, 'audit-paused.png'))
  await wd.click(tid('resume'))
  await wd.$(tid('no-paused'))
  assert.match(await wd.text(tid('pause-status')), /Resumed/)
  await wd.until(async () => (await wd.exec(`return [...document.querySelectorAll('[data-testid="event-row"]')].map(r => r.dataset.kind)`)).includes('agent_resumed'), 'the resume in the log')

  // Asking again is shown again.
  agent.send(consentRequest('c7', { proposal: proposal(PARLEY, { id: 'p_7', amount: 700 }), principal, agent: agentPub }))
  await agent.pending('c7')

  // Pause it from the audit view (until resumed): the waiting request is denied, told why.
  await wd.exec(`document.querySelector('[data-testid="pause-agents"]').open = true`)
  await wd.until(async () => wd.exec(`return !!document.querySelector('[data-testid="pause-agent"][data-agent="${agentPub}"]')`), 'the agent offered to pause')
  await wd.click(`[data-testid="pause-agent"][data-agent="${agentPub}"] [data-testid="pause"]`)
  const fin = await agent.final('c7')
  assert.equal(fin.kind, 'DENIED', JSON.stringify(fin))
  assert.match(fin.reason ?? '', /paused/, JSON.stringify(fin))
  await wd.until(async () => /until you resume it/.test(await wd.text(tid('paused-row'))), 'paused until resumed')
  agent.send(consentRequest('c8', { proposal: proposal(PARLEY, { id: 'p_8', amount: 700 }), principal, agent: agentPub }))
  assert.equal((await agent.final('c8', 10_000)).code, 'agent_paused')
})

test('tray: "Pause <agent>" for an agent asking now denies what waits and refuses what follows, unseen', async () => {
  const other = agentKey()
  agent.send(consentRequest('c9', { proposal: proposal(PARLEY, { id: 'p_9', amount: 700 }), principal, agent: other }))
  await agent.pending('c9')
  // The agent by its one name (its four words here), never its key; the
  // pause offers durations in a submenu.
  await wd.until(() => trayItems().some(([, l]) => l.startsWith('Pause ')) || null, 'the Pause line in the tray menu', 30_000)
  const items = trayItems()
  const at = items.findIndex(([, l]) => l.startsWith('Pause '))
  assert.match(items[at][1], /^Pause [a-z]+ [a-z]+ [a-z]+ [a-z]+$/, items[at][1])
  assert.equal(items.filter(([, l]) => l.startsWith('Pause ')).length, 1, 'only agents asking now are offered')
  assert.deepEqual(items.slice(at + 1, at + 4).map(([, l]) => l), ['For 15 minutes', 'For 1 hour', 'Until I resume it'])
  assert.ok(!items.some(([, l]) => l.includes('ed25519:')), 'no key as a name in the tray')
  const id = items[at + 3][0]
  trayClick(id)
  const fin = await agent.final('c9')
  assert.equal(fin.kind, 'DENIED', JSON.stringify(fin))
  assert.match(fin.reason ?? '', /paused by the human from the tray/, JSON.stringify(fin))
  await wd.until(() => !trayItems().some(([, l]) => l.startsWith('Pause ')), 'the tray line gone with the request')
  const shown = notifications()
  agent.send(consentRequest('c10', { proposal: proposal(PARLEY, { id: 'p_10', amount: 700 }), principal, agent: other }))
  const refused = await agent.final('c10', 10_000)
  assert.deepEqual([refused.kind, refused.code], ['REJECTED', 'agent_paused'], JSON.stringify(refused))
  assert.match(refused.message, /until they resume it/)
  await sleep(1500)
  assert.equal(notifications(), shown, 'no notification')
  assert.equal((await listed()).length, 0, 'nothing waiting')
})
