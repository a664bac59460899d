// End to end through the real app binary: tauri-driver + WebKitWebDriver
// drive its real windows under Xvfb; a real agent (this process) talks to its
// real socket with custody-protocol frames; keys are in a real (private)
// gnome-keyring; notifications go to a real dunst; tokens are checked with
// the real `parley verify`. scripts/test-app.sh sets all of that up.
//
// The steps depend on each other (one app, one keychain, one audit log), so
// they run in order in one file.

import { test, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { execFileSync, spawnSync } from 'node:child_process'
import { mkdirSync, readFileSync, existsSync } from 'node:fs'
import { join, dirname } from 'node:path'
import { Agent, agentKey, proposal, consentRequest } from './agent.mjs'
import { trayCount, trayProp } from './tray.mjs'
import { PARLEY, SOCKET, SHOTS, tid, sleep, wd, main, startApp, createKey, verify, opened, openReview, openNewestReview, openGrantForm, armed, closeByButton, invoke, notified } from './session.mjs'

let principal
let agent
const agentPub = agentKey()

/** Clicks Issue once custody previewed the form and the window is armed. */
async function issueWhenArmed() {
  await armed('issue', 'Issue armed').catch(async (e) => {
    const said = await wd.exec(`return ['issue-hint', 'status'].map((t) => document.querySelector('[data-testid="' + t + '"]')?.textContent).join(' | ') + ' | focus ' + document.hasFocus()`)
    throw new Error(`${e.message}: ${said}`)
  })
  await wd.click(tid('issue'))
}

/** Back to the main window, showing home (the grant form, audit and
 *  settings are its other views). */
async function backToMain() {
  await wd.switchTo(main)
  const home = () => wd.exec(`return !!document.querySelector('[data-testid="pending-section"]')`)
  if (!(await home())) {
    await wd.click(tid('open-home'))
    await wd.until(home, 'the main window back home')
  }
}

before(async () => {
  assert.ok(SOCKET, 'PARLEY_CUSTODY_SOCKET must be set (scripts/test-app.sh does)')
  mkdirSync(SHOTS, { recursive: true })
  await startApp()
})

after(async () => {
  agent?.close()
  await wd.quit()
})

test('newcomer: with no principal key, the app offers to create one', async () => {
  await wd.$(tid('welcome'))
  assert.match(await wd.text(tid('welcome')), /First, your principal key/)
  await wd.screenshot(join(SHOTS, 'first-run.png'))
  principal = await createKey('Ana (personal)')
  agent = await Agent.connect(SOCKET)
  agent.send({ custody: 1, id: 'h1', op: 'hello' })
  const hello = await agent.final('h1')
  assert.equal(hello.kind, 'HELLO')
  assert.deepEqual(hello.principals, [{ key: principal, label: 'Ana (personal)' }])
  await wd.until(() => trayCount() === 0, 'the tray icon of the service, with no badge while nothing waits')
})

test('consent: the review shows the real effects; Approve signs exactly that proposal', async () => {
  const p = proposal(PARLEY, { id: 'p_1', amount: 7136 })
  agent.send(consentRequest('c1', { proposal: p, principal, agent: agentPub }))
  const pending = await agent.pending('c1')
  assert.equal(pending.position, 1)
  // A notification went out, in words, and the tray icon carries a badge.
  // The agent by its one name (its four words: it has no name yet), never its key.
  const said = await wd.until(() => notified().match(/“([a-z]+ [a-z]+ [a-z]+ [a-z]+)” asks you to approve 71\.36 USD at shop\.example/), 'the notification', 20_000)
  assert.ok(!notified().includes(`${agentPub.slice(0, 18)}…`), 'no key as the agent’s name')
  assert.ok(!notified().includes('Signed with'), 'nothing is signed yet')
  // A request, not a chat message; normal urgency; the app's icon.
  assert.match(notified(), /string "category"\s+variant\s+string "x-parley-custody\.request"/)
  assert.match(notified(), /string "urgency"\s+variant\s+byte 1/)
  assert.doesNotMatch(notified(), /im\.received/)
  assert.match(notified(), /string "file:\/\/[^"]*notification-icon\.png"/)
  await wd.until(() => trayCount() === 1, 'the tray count')
  assert.match(trayProp('Status'), /NeedsAttention/, 'the tray asks for attention')

  // The notification's action opens the review window (as a click on it does).
  execFileSync('dunstctl', ['action', '0'])
  await wd.switchToWindow(/review\.html#q\d+$/)
  const id = (await wd.url()).split('#')[1]
  opened.add(id)
  await wd.$(tid('approve'))
  const review = await wd.handle()
  // Regaining focus re-arms the delay at once (the first delay may be over by now on a slow machine).
  assert.equal(await wd.exec(`window.dispatchEvent(new Event('blur')); window.dispatchEvent(new Event('focus')); return document.querySelector('[data-testid="approve"]').disabled`), true, 'Approve waits after focus returns')
  assert.equal(await wd.text(tid('service')), 'shop.example')
  assert.equal(await wd.text(tid('capability')), 'shop.order')
  assert.equal(await wd.text(tid('cost')), '71.36 USD')
  assert.equal(await wd.text(tid('agent-phrase')), said[1], 'the notification named it by the words the review shows')
  assert.equal(await wd.text(tid('risk')), 'medium')
  assert.equal(await wd.text(tid('undo')), 'can be undone within 30m')
  const effects = await wd.exec(`return [...document.querySelectorAll('[data-testid="effects"] li')].map(e => e.textContent)`)
  assert.deepEqual(effects, ['+ create order', '$ charge card ••42 — 71.36 USD'])
  const requester = await wd.text(tid('requester'))
  assert.match(requester, new RegExp(`pid ${process.pid}, `), 'the peer as the kernel reported it')
  assert.match(requester, /node/)
  assert.equal(await wd.text(tid('agent-key')), `${agentPub.slice(0, 18)}…`)
  assert.equal(await wd.text(tid('hash')), `${p.hash.slice(0, 12)}…`)
  assert.equal(await wd.text(tid('summary')), 'Order 3 items')
  // Why custody asks, in custody's words: it gave this agent no grant yet.
  assert.equal(await wd.text(tid('why')), 'No grant of yours covers this: custody never gave this agent a grant for shop.example')
  // The window sits inside the screen's work area, its footer (Deny, Approve) on screen without scrolling.
  const fit = await wd.exec(`const a = document.querySelector('[data-testid="approve"]').getBoundingClientRect(); return { x: window.screenX, y: window.screenY, w: window.outerWidth, h: window.outerHeight, ax: screen.availLeft ?? 0, ay: screen.availTop ?? 0, aw: screen.availWidth, ah: screen.availHeight, bottom: a.bottom, inner: window.innerHeight, scrolled: window.scrollY }`)
  assert.ok(fit.x >= fit.ax && fit.y >= fit.ay && fit.x + fit.w <= fit.ax + fit.aw && fit.y + fit.h <= fit.ay + fit.ah, `the review window inside the work area: ${JSON.stringify(fit)}`)
  assert.ok(fit.scrolled === 0 && fit.bottom <= fit.inner, `Approve on screen at the top: ${JSON.stringify(fit)}`)
  // Other windows cannot decide: the home window has no permission for it at all.
  await wd.switchTo(main)
  const refused = await invoke('review_decide', { id, approve: true, confirmed: true, reason: null })
  assert.match(refused, /^not_permitted: .*may not do that/, refused)
  await wd.switchTo(review)
  await armed('approve', 'Approve after the delay')
  await wd.screenshot(join(SHOTS, 'review.png'))
  await wd.click(tid('approve'))

  const fin = await agent.final('c1')
  assert.equal(fin.kind, 'APPROVED', JSON.stringify(fin))
  // After Approve a notification says what was approved, for whom (it stays; the window closes).
  await wd.until(() => new RegExp(`Approved 71\\.36 USD at shop\\.example for “${said[1]}”`).test(notified()), 'the approval notification', 20_000)
  const token = fin.grant
  const ok = verify(token, principal, ['--svc', 'shop.example', '--verb', 'COMMIT', '--cap', 'shop.order', '--hash', p.hash, '--cost', '71.36USD', '--risk', 'medium'])
  assert.equal(ok.code, 0, ok.out)
  assert.match(ok.out, /^ok/)
  const other = proposal(PARLEY, { id: 'p_other', amount: 7136 })
  for (const [what, args] of [
    ['another proposal', ['--svc', 'shop.example', '--verb', 'COMMIT', '--cap', 'shop.order', '--hash', other.hash, '--cost', '71.36USD', '--risk', 'medium']],
    ['another service', ['--svc', 'evil.example', '--verb', 'COMMIT', '--cap', 'shop.order', '--hash', p.hash, '--cost', '71.36USD', '--risk', 'medium']],
    ['another verb', ['--svc', 'shop.example', '--verb', 'UNDO', '--cap', 'shop.order']],
  ]) {
    const r = verify(token, principal, args)
    assert.notEqual(r.code, 0, `${what}: ${r.out}`)
    assert.match(r.out, /forbidden/, what)
  }
  // The window closes itself after the decision; the badge goes away.
  await wd.until(async () => (await wd.handles()).length === 1, `review window ${id} closed`)
  await backToMain()
  await wd.until(() => trayCount() === 0, 'the tray count cleared')
})

test('deny: an irreversible, high-risk proposal is denied with a reason; nothing is signed', async () => {
  const p = proposal(PARLEY, {
    id: 'p_2',
    amount: 250000,
    risk: 'high',
    undo: null,
    summary: 'Wire transfer',
    effects: [{ op: 'send', target: 'wire to acct ••1234', detail: '2500.00 USD' }],
  })
  agent.send(consentRequest('c2', { proposal: p, principal, agent: agentPub }))
  await agent.pending('c2')
  const id = await openNewestReview()
  // Closing the review mid-request denies nothing, and is never silent.
  await wd.exec(`window.__TAURI_INTERNALS__.invoke('window_close'); return true`).catch(() => {})
  await wd.until(async () => (await wd.handles()).length === 1, 'the review window closed')
  await wd.until(() => notified().includes('2500.00 USD at shop.example — closing its window did not deny it; open it from the tray or home'), 'the still-waiting notification', 20_000)
  assert.match(notified(), /string "Still waiting"/)
  assert.ok(!agent.frames.some((f) => f.re === 'c2' && f.kind !== 'PENDING'), 'the request still waits')
  await openReview(id)
  assert.equal(await wd.text(tid('cost')), '2500.00 USD')
  assert.equal(await wd.text(tid('risk')), 'high')
  assert.equal(await wd.text(tid('undo')), 'IRREVERSIBLE — cannot be undone')
  assert.equal(await wd.exec(`return document.activeElement.dataset.testid`), 'deny', 'Deny is the default')
  await wd.type('#reason', 'not today')
  await wd.click(tid('deny'))
  const fin = await agent.final('c2')
  assert.deepEqual([fin.kind, fin.reason], ['DENIED', 'not today'])
  // Its window shows the result, then closes by itself: gone before the next request (a window
  // closing under the next steps moves the focus while they click).
  await wd.until(async () => (await wd.handles()).length === 1, 'the denied review’s window closed')
  await backToMain()
})

test('grant request: the human narrows it in the form; the agent receives exactly that', async () => {
  const exp = Math.floor(Date.now() / 1000) + 86400
  agent.send({
    custody: 1,
    id: 'g1',
    op: 'grant',
    agent: agentPub,
    reason: 'weekly groceries',
    caveats: [{ svc: ['shop.example'] }, { verbs: ['ASK', 'INTENT', 'COMMIT'] }, { per: { max: 4000, currency: 'USD' } }, { exp }],
  })
  await agent.pending('g1')
  await openNewestReview()
  assert.match(await wd.text(tid('preview')), /at shop\.example/)
  assert.match(await wd.text(tid('warnings')), /splitting/)
  const words = await wd.text(tid('agent-phrase'))
  await openGrantForm()
  // The form names the agent as every view does (no name yet: its four words), the key after it.
  assert.equal(await wd.text(tid('request-agent')), words)
  // Back to the review, in the same window, and to the form again; asking
  // for the form from elsewhere brings this window forward, opening none.
  await wd.click(tid('cancel'))
  await wd.until(async () => /review\.html#q\d+$/.test(await wd.url()), 'the review again in its window')
  await wd.$(tid('approve'))
  const windows = (await wd.handles()).length
  assert.equal(await invoke('open_window', { kind: 'grant', id: [...opened].at(-1), agent: null }), 'accepted')
  await sleep(500)
  assert.equal((await wd.handles()).length, windows, 'this request’s one window, brought forward')
  await openGrantForm()
  assert.equal(await wd.prop('#agent', 'value'), agentPub)
  assert.equal(await wd.prop('#services', 'value'), 'shop.example')
  assert.equal(await wd.prop('#per', 'value'), '40.00')
  await wd.type('#spend', '100')
  await wd.click('#exp-8h')
  await wd.type('#agent-label', 'groceries bot')
  // The sentence is custody's, for the current plan: it comes when custody has answered.
  const sentence = /up to 40\.00 USD each, 100\.00 USD in total, until/
  await wd.until(async () => sentence.test(await wd.text(tid('preview'))), 'custody\'s sentence of the grant').catch(() => {})
  const preview = await wd.text(tid('preview'))
  assert.match(preview, sentence)
  await wd.exec(`document.querySelector('.preview-box').scrollIntoView({ block: 'end' })`)
  await wd.screenshot(join(SHOTS, 'grant-form.png'))
  await issueWhenArmed()
  const fin = await agent.final('g1')
  assert.equal(fin.kind, 'ISSUED', JSON.stringify(fin))
  assert.deepEqual(fin.caveats.slice(0, 4), [
    { svc: ['shop.example'] },
    { verbs: ['ASK', 'INTENT', 'COMMIT'] },
    { per: { max: 4000, currency: 'USD' } },
    { spend: { max: 10000, currency: 'USD' } },
  ])
  const grantExp = fin.caveats.at(-1).exp
  assert.ok(Math.abs(grantExp - (Math.floor(Date.now() / 1000) + 8 * 3600)) < 120, 'the 8h the human chose, not the 24h asked')
  await wd.until(async () => /sent to the waiting agent/.test(await wd.text(tid('status'))), 'the form says where the grant went')
  const ask = verify(fin.grant, principal, ['--svc', 'shop.example', '--verb', 'ASK', '--cap', 'shop.order'])
  assert.equal(ask.code, 0, ask.out)
  const small = verify(fin.grant, principal, ['--svc', 'shop.example', '--verb', 'COMMIT', '--cap', 'shop.order', '--hash', 'h', '--cost', '30USD', '--risk', 'low'])
  assert.equal(small.code, 0, small.out)
  const big = verify(fin.grant, principal, ['--svc', 'shop.example', '--verb', 'COMMIT', '--cap', 'shop.order', '--hash', 'h', '--cost', '50USD', '--risk', 'low'])
  assert.match(big.out, /consent_required/, 'over the per-action cap: the human is asked')
  await closeByButton('cancel')
  await backToMain()
})

test('grant form with no request: the token is shown once, to copy', async () => {
  const other = agentKey()
  await backToMain()
  await wd.click(tid('open-grant'))
  await wd.switchToWindow(/grant\.html$/)
  // Known agents by their one name (the label given on the last Issue), the key's short form after it;
  // picking one fills in its key, never the text shown.
  await wd.$('#known')
  const known = await wd.exec(`return [...document.querySelectorAll('#known option')].map((o) => [o.value, o.textContent])`)
  const mine = known.find(([k]) => k === agentPub)
  assert.ok(mine, JSON.stringify(known))
  assert.ok(mine[1].startsWith(`groceries bot — ${agentPub.slice(0, 18)}…`), mine[1])
  await wd.exec(`const s = document.querySelector('#known'); s.value = arguments[0]; s.dispatchEvent(new Event('change')); return 1`, agentPub)
  assert.equal(await wd.prop('#agent', 'value'), agentPub)
  assert.equal(await wd.prop('#agent-label', 'value'), 'groceries bot')
  await wd.exec(`document.querySelector('#agent-label').value = ''; return 1`)
  await wd.type('#agent', other)
  await wd.type('#services', 'books.example')
  await wd.click('#verb-COMMIT')
  await wd.type('#per', '25')
  await wd.type('#spend', '60')
  await wd.click('#exp-1h')
  await wd.type('#note', 'reading list')
  await issueWhenArmed()
  const token = await wd.until(async () => {
    const v = await wd.prop(tid('token'), 'value')
    return v?.startsWith('pg1.') ? v : null
  }, 'the token')
  await wd.click(tid('copy-token'))
  await wd.until(async () => /Copied\./.test(await wd.text(tid('copied'))), 'the token copied to the clipboard')
  const r = verify(token, principal, ['--svc', 'books.example', '--verb', 'ASK', '--cap', 'books.find'])
  assert.equal(r.code, 0, r.out)
  const holder = spawnSync(PARLEY, ['inspect', token, '--json'], { encoding: 'utf8' })
  assert.ok(holder.stdout.includes(other), 'the grant is for the key typed in')
  await closeByButton('cancel')
  await backToMain()
})

test('audit view: every decision, live grants in words, a verified chain, export', async () => {
  await backToMain()
  await wd.click(tid('open-audit'))
  await wd.switchToWindow(/audit\.html$/)
  await wd.$(tid('event-row'))
  const kinds = await wd.exec(`return [...document.querySelectorAll('[data-testid="event-row"]')].map(r => r.dataset.kind)`)
  for (const k of ['key_created', 'consent_approved', 'consent_denied', 'grant_issued']) assert.ok(kinds.includes(k), `${k} in ${kinds}`)
  assert.equal(kinds[0], 'grant_issued', 'newest first')
  assert.equal(kinds.at(-1), 'key_created')
  assert.equal(kinds.filter((k) => k === 'grant_issued').length, 2)
  assert.match(await wd.text(tid('chain')), /Chain verified: all \d+ events are intact/)
  const live = await wd.exec(`return [...document.querySelectorAll('[data-testid="live-row"]')].map(r => r.textContent)`)
  assert.equal(live.length, 2, `the two grants are live: ${live.join('\n')}`)
  assert.ok(live.some((l) => /books\.example/.test(l) && /up to 25\.00 USD each/.test(l)))
  // The approved consent is listed apart, as given to the agent for its one use.
  const used = await wd.exec(`return [...document.querySelectorAll('[data-testid="used-row"]')].map(r => r.textContent)`)
  assert.equal(used.length, 1, used.join('\n'))
  assert.match(used[0], /one shop\.order for 71\.36 USD/)
  assert.match(used[0], /given to the agent for its one use/)
  // Agents by their names (the human's, else four words), never by key alone.
  const names = await wd.exec(`return [...document.querySelectorAll('[data-testid="live-row"] [data-testid="agent-name"]')].map(r => r.textContent)`)
  assert.equal(names.length, 2)
  for (const n of names) assert.ok(!n.startsWith('ed25519:'), n)
  const denied = await wd.exec(`return document.querySelector('[data-kind="consent_denied"]').textContent`)
  assert.match(denied, /not today/)
  assert.match(denied, /2500\.00 USD/)
  await wd.screenshot(join(SHOTS, 'audit.png'))
  await wd.click(tid('export-jsonl'))
  const msg = await wd.until(async () => {
    const t = await wd.text(tid('status'))
    return /Exported/.test(t) ? t : null
  }, 'the export')
  const path = msg.replace(/^Exported \d+ events? to /, '')
  assert.ok(existsSync(path), path)
  // Into the user's Downloads (this session's HOME has no user-dirs file: ~/Downloads, created).
  assert.equal(dirname(path), join(process.env.HOME, 'Downloads'), path)
  const lines = readFileSync(path, 'utf8').trim().split('\n').map((l) => JSON.parse(l))
  assert.deepEqual(lines.map((l) => l.kind), kinds)
  // Filter by kind.
  await wd.exec(`const s = document.querySelector('#f-kind'); s.value = 'consent_denied'; s.dispatchEvent(new Event('change'))`)
  await wd.until(async () => {
    const k = await wd.exec(`return [...document.querySelectorAll('[data-testid="event-row"]')].map(r => r.dataset.kind)`)
    return k.length === 1 && k[0] === 'consent_denied'
  }, 'the filtered view')
  await sleep(100)
})

test('says_free_but_charges: a charge with cost null is shown as such, with the signing principal', async () => {
  await backToMain()
  const p = proposal(PARLEY, {
    id: 'p_free',
    cost: null,
    summary: 'Free sample',
    effects: [{ op: 'charge', target: 'card ••42', detail: 'shipping' }],
  })
  agent.send(consentRequest('c4', { proposal: p, principal, agent: agentPub }))
  await agent.pending('c4')
  await openNewestReview()
  assert.equal(await wd.text(tid('cost')), 'not stated (an effect charges)')
  assert.match(await wd.text(tid('warnings')), /^SAYS FREE BUT CHARGES/)
  assert.match(await wd.text(tid('principal')), new RegExp(`^“Ana \\(personal\\)” ${principal.slice(0, 18)}…$`))
  await wd.until(() => notified().includes('If you approve, your key “Ana (personal)” signs it'), 'the principal in the notification', 20_000)
  await wd.screenshot(join(SHOTS, 'review-says-free-but-charges.png'))
  await wd.click(tid('deny'))
  assert.equal((await agent.final('c4')).kind, 'DENIED')
  await backToMain()
})

test('a_widening_form_edit_is_shown_and_refused_unless_confirmed', async () => {
  await backToMain()
  const exp = Math.floor(Date.now() / 1000) + 3600
  agent.send({
    custody: 1,
    id: 'g2',
    op: 'grant',
    agent: agentPub,
    reason: 'look around',
    caveats: [{ svc: ['shop.example'] }, { verbs: ['ASK'] }, { exp }],
  })
  await agent.pending('g2')
  await openNewestReview()
  await openGrantForm()
  await wd.click('#verb-COMMIT')
  await wd.until(async () => /adds COMMIT/.test(await wd.text(tid('widenings'))), 'the widening shown')
  await wd.until(async () => /Confirm the widening/.test(await wd.text(tid('issue-hint'))), 'Issue waits for the confirmation')
  assert.equal(await wd.prop(tid('issue'), 'disabled'), true)
  // Sending the widened grant without the confirmation is refused by the
  // backend (once the window is armed, so that is not the reason).
  await sleep(1700)
  const shown = JSON.parse(await wd.text(tid('caveats-json')))
  assert.ok(shown.some((c) => c.verbs?.includes('COMMIT')), JSON.stringify(shown))
  const refused = await invoke('grant_issue', {
    agent: agentPub,
    caveats: shown,
    shown,
    widenings: [],
    gesture: 'click',
    principal: null,
    note: null,
    request: opened.size ? [...opened].at(-1) : null,
  })
  assert.match(refused, /allows more than the agent asked for \(adds COMMIT\)/, refused)
  assert.ok(!agent.frames.some((f) => f.re === 'g2' && f.kind !== 'PENDING'), 'nothing issued')
  await wd.exec(`document.querySelector('[data-testid="widenings"]').scrollIntoView({ block: 'center' })`)
  await wd.screenshot(join(SHOTS, 'grant-form-widening.png'))
  await wd.click(tid('confirm-widening'))
  await issueWhenArmed()
  const fin = await agent.final('g2')
  assert.equal(fin.kind, 'ISSUED', JSON.stringify(fin))
  assert.ok(fin.caveats.some((c) => c.verbs?.includes('COMMIT')), 'the widening the human confirmed')
  await closeByButton('cancel')
  await backToMain()
})
