// The playground's whole scenario (docs/playground.md), once, through the
// real app: the real `parley-playground serve` (shop.example and
// cal.example.com) and the real scripted `parley-playground agent`, pointed at
// the app's socket, run as child processes; WebDriver plays the human in the
// app's real windows: it issues the agent's grant from the grant form and,
// when the order over the per-commit limit comes back `consent_required`,
// checks the review window against the proposal the agent printed and clicks
// Approve. The agent must then reach the order's RECEIPT, see its read-only
// sub-agent `forbidden`, and exit 0. scripts/test-app.sh sets up the desktop
// session (Xvfb, D-Bus, gnome-keyring, dunst, tauri-driver).
//
// The playground binary: $PARLEY_PLAYGROUND, else target/debug/parley-playground
// (built here with cargo when $PARLEY_PLAYGROUND is not set, so it is never stale:
// scripts/test-app.sh builds only the app and the CLI).

import { test, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { PLAYGROUND, SOCKET, tid, sleep, wd, main, startApp, createKey, openNewestReview, openGrantForm, armed, closeByButton, buildPlayground } from './session.mjs'
import { Child as Program } from './children.mjs'

// The story in either dialect: PLAYGROUND_DIALECT=yea (playground-yea.e2e.mjs)
// runs it in YEA v1 (`uses`, each/total), else Parley v1.
const DIALECT = process.env.PLAYGROUND_DIALECT === 'yea' ? 'yea' : 'parley'
const YEA = DIALECT === 'yea'
const dialectArgs = YEA ? ['--dialect', 'yea'] : []

const scratch = mkdtempSync(join(tmpdir(), 'parley-playground-e2e-'))
const LOGS = process.env.T ?? scratch
const children = []
let principal
let services
let agent

/** The playground as `name` (its own PARLEY_HOME), its output kept and also
 *  in $T/playground-<name>.log: scripts/test-app.sh shows those logs when a run fails. */
class Child extends Program {
  constructor(name, args) {
    super(PLAYGROUND, args, { name, env: { PARLEY_HOME: join(scratch, name) }, log: join(LOGS, `playground-${name}.log`) })
    children.push(this)
  }
}

/** The lines of one proposal in the agent's PROPOSALS Lens: its header, effects and cost line. */
function proposalBlock(out, id) {
  const lines = out.split('\n').map((l) => l.replace(/^ {3}│ /, ''))
  const start = lines.findIndex((l) => l.startsWith(`[${id}] `))
  assert.ok(start >= 0, `the agent printed proposal ${id}`)
  const block = [lines[start]]
  for (const l of lines.slice(start + 1)) {
    if (!l.startsWith('  ')) break
    block.push(l.trim())
  }
  return block
}

before(async () => {
  assert.ok(SOCKET, 'PARLEY_CUSTODY_SOCKET must be set (scripts/test-app.sh does)')
  buildPlayground()
  await startApp()
})

after(async () => {
  for (const c of children) await c.stop()
  await wd.quit()
  rmSync(scratch, { recursive: true, force: true })
})

test('the principal key is created in the app', async () => {
  principal = await createKey('Ana (playground)')
})

test('the services start, trusting the principal the app reports', async () => {
  services = new Child('serve', ['serve', '--shop', '127.0.0.1:0', '--cal', '127.0.0.1:0', '--custody-socket', SOCKET, ...dialectArgs])
  await services.waitFor(/serving until Ctrl-C/, 'the services listening')
  assert.match(services.out, new RegExp(`trusting grants from ${principal}`))
  if (YEA) assert.match(services.out, /speaking YEA v1/)
})

test('grant: the agent asks, the human issues it from the grant form in the app', async () => {
  const shop = services.out.match(new RegExp(`^shop\\.example +${DIALECT}://(\\S+)$`, 'm'))[1]
  const cal = services.out.match(new RegExp(`^cal\\.example\\.com +${DIALECT}://(\\S+)$`, 'm'))[1]
  agent = new Child('agent', [
    'agent',
    '--custody-socket', SOCKET,
    '--shop', shop,
    '--cal', cal,
    '--agent-key', join(scratch, 'agent.key'),
    '--wait', '600',
    ...dialectArgs,
  ])
  const [, agentPub] = await agent.waitFor(/agent key (ed25519:\S+)/, 'the agent key')
  await agent.waitFor(/waiting for the human to decide in Parley Custody/, 'the grant request')
  assert.match(agent.out, new RegExp(`principal ${principal}`))

  await openNewestReview(30_000)
  assert.equal(await wd.text(tid('agent-key')), `${agentPub.slice(0, 18)}…`)
  assert.match(await wd.text(tid('requester')), new RegExp(`pid ${agent.pid}, .*parley-playground`))
  assert.match(await wd.text(tid('service')), /shop\.example.*cal\.example\.com/)
  assert.match(await wd.text(tid('summary')), /move a meeting and order meals/)
  const asked = await wd.exec(`return [...document.querySelectorAll('[data-testid="caveats"] code')].map(e => JSON.parse(e.textContent))`)
  const limits = YEA
    ? [
        { each: { of: 'spend', max: 4000, scale: 2, unit: 'USD' } },
        { total: { of: 'spend', max: 10000, scale: 2, unit: 'USD' } },
        { total: { of: 'emails', max: 3 } },
      ]
    : [{ per: { max: 4000, currency: 'USD' } }, { spend: { max: 10000, currency: 'USD' } }]
  assert.deepEqual(asked.slice(0, 4 + limits.length), [
    { svc: ['shop.example', 'cal.example.com'] },
    { verbs: ['ASK', 'INTENT', 'COMMIT', 'UNDO', 'EXPAND'] },
    { can: ['shop.*', 'calendar.*'] },
    ...limits,
    { risk: 'medium' },
  ])

  await openGrantForm()
  assert.equal(await wd.prop('#agent', 'value'), agentPub)
  assert.equal(await wd.prop('#services', 'value'), 'shop.example, cal.example.com')
  assert.equal(await wd.prop('#capabilities', 'value'), 'shop.*, calendar.*')
  if (YEA) {
    // The measured limits, each in its row, from the request.
    const rows = await wd.exec(`return [...document.querySelectorAll('[data-testid="measure"]')].map(r => [...r.querySelectorAll('select, input')].map(i => i.value))`)
    assert.deepEqual(rows, [['each', '40.00', 'USD', 'spend'], ['total', '100.00', 'USD', 'spend'], ['total', '3', '', 'emails']])
    assert.equal(await wd.prop('#per', 'value'), '')
  } else {
    assert.equal(await wd.prop('#per', 'value'), '40.00')
    assert.equal(await wd.prop('#spend', 'value'), '100.00')
  }
  assert.equal(await wd.prop('#risk', 'value'), 'medium')
  for (const v of ['ASK', 'INTENT', 'COMMIT', 'UNDO', 'EXPAND']) assert.equal(await wd.prop(`#verb-${v}`, 'checked'), true, v)
  // The human keeps what was asked, but for one hour from now (longer than asked).
  await wd.click('#exp-1h')
  await wd.type('#agent-label', 'playground agent')
  const sentence = YEA
    ? /up to 40\.00 USD each, at most 100\.00 USD in total, at most 3 emails in total, risk up to medium, until/
    : /up to 40\.00 USD each, 100\.00 USD in total, risk up to medium, until/
  // The sentence is custody's, for the current plan: it comes when custody has answered.
  await wd.until(async () => sentence.test(await wd.text(tid('preview'))), 'custody\'s sentence of the grant').catch(() => {})
  assert.match(await wd.text(tid('preview')), sentence)
  // The agent asked for 10 minutes: one hour is a widening, named by custody
  // and issued only once the human confirms it on purpose.
  await wd.until(async () => /lasts longer: until /.test(await wd.text(tid('widenings'))), 'the longer expiry named as a widening')
  assert.equal(await wd.prop(tid('issue'), 'disabled'), true, 'not before the widening is confirmed')
  await wd.click(tid('confirm-widening'))
  // Issue is armed once custody previewed the form and the window has been in front for a moment.
  await armed('issue', 'Issue armed')
  await wd.click(tid('issue'))
  await wd.until(async () => /sent to the waiting agent/.test(await wd.text(tid('status'))), 'the form says the grant went to the agent')

  const [, signed] = await agent.waitFor(/✓ grant pg1\.\S+ \(\d+ bytes\), caveats as signed: (.*)$/m, 'the grant at the agent')
  assert.match(signed, /^\[\{"svc":\["shop\.example","cal\.example\.com"\]\},/)
  assert.match(signed, /\{"exp":\d+\}\]$/)
  // Cancel is now Close; the grant's review window says it is no longer waiting.
  await closeByButton('cancel')
  await wd.switchTo(main)
})

test('consent: the over-the-limit order shows its real proposal; Approve lets the agent commit it', async () => {
  // The calendar steps run on their own (within policy); the order comes back consent_required.
  const [, hash] = await agent.waitFor(/consent: principal must approve ([A-Za-z0-9_-]{43}) /, 'consent_required for the order')
  const [, proposalId] = await agent.waitFor(/→ COMMIT (p_[A-Za-z0-9_-]+) #/, 'the COMMIT of the order')
  // The agent checked the service's consent request against its proposal before asking custody.
  await agent.waitFor(/consent request matches the proposal.*\n.*waiting for the human to decide in Parley Custody/, 'the consent request')
  assert.equal(hash.slice(0, 10), agent.out.match(/→ COMMIT p_\S+ #(\S{10})…/)[1], 'the hash the agent committed')

  // What the agent printed of that proposal: "[p_…] 3 meals for DAY — 58.30 USD", effects, "cost: … · risk: …".
  const block = proposalBlock(agent.out, proposalId)
  const [, summary, cost] = block[0].match(/^\[p_\S+\] (.* — (\d+\.\d\d USD))$/)
  const printedEffects = block.filter((l) => /^[+~\-$>]/.test(l))
  const [, risk] = block.find((l) => l.startsWith(YEA ? 'uses: ' : 'cost: ')).match(/risk: (\w+)/)
  const [, undo] = agent.out.match(/proposals — undo: (\S+) ·/)
  assert.equal(cost, '58.30 USD')
  assert.ok(printedEffects.length >= 2, block.join('\n'))

  await openNewestReview(30_000)
  assert.equal(await wd.text(tid('service')), 'shop.example')
  assert.equal(await wd.text(tid('capability')), 'shop.order')
  if (YEA) {
    // Every measure the order uses, each on its own line: the spend as money, and the email.
    const uses = await wd.exec(`return [...document.querySelectorAll('[data-testid="use"]')].map(e => e.textContent)`)
    assert.deepEqual(uses, ['1 emails', cost])
  } else {
    assert.equal(await wd.text(tid('cost')), cost)
  }
  assert.equal(await wd.text(tid('risk')), risk)
  assert.equal(await wd.text(tid('undo')), `can be undone within ${undo}`, 'undoable: not IRREVERSIBLE')
  const effects = await wd.exec(`return [...document.querySelectorAll('[data-testid="effects"] li')].map(e => e.textContent)`)
  assert.deepEqual(effects, printedEffects)
  assert.equal(await wd.text(tid('hash')), `${hash.slice(0, 12)}…`)
  assert.equal(await wd.prop(tid('hash'), 'title'), hash)
  assert.equal(await wd.text(tid('summary')), summary)
  assert.match(await wd.text(tid('requester')), new RegExp(`pid ${agent.pid}, .*parley-playground`))
  assert.equal(await wd.text(tid('agent-key')), `${agent.out.match(/agent key (ed25519:\S+)/)[1].slice(0, 18)}…`)

  // Approve waits: re-armed when the window regains focus, enabled only after the delay.
  assert.equal(
    await wd.exec(`window.dispatchEvent(new Event('blur')); window.dispatchEvent(new Event('focus')); return document.querySelector('[data-testid="approve"]').disabled`),
    true,
    'Approve is off right after the window (re)gains focus',
  )
  await armed('approve', 'Approve after the delay')
  await wd.click(tid('approve'))

  await agent.waitFor(/✓ one-shot consent grant pg1\./, 'the consent grant at the agent')
  const receipt = await agent.waitFor(
    new RegExp(`→ COMMIT ${proposalId} #\\S+ \\+ 1 grant\\n(?:.*\\n)*?.*✓ ${summary.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')} \\(receipt (r_\\S+)\\)`),
    'the RECEIPT of the order',
  )
  assert.match(agent.out.slice(receipt.index), /status: placed/)
})

test('the read-only sub-agent is forbidden to order; the agent exits 0', async () => {
  const [, need] = await agent.waitFor(/✗ forbidden: .*\n(?:.*\n)*?.*need: (.*)$/m, 'the sub-agent forbidden')
  assert.deepEqual(JSON.parse(need), [{ verbs: ['ASK'] }])
  await agent.waitFor(/✔ done/, 'the end of the scenario')
  const { code, signal } = await agent.exit
  assert.deepEqual({ code, signal }, { code: 0, signal: null }, agent.out)
})
