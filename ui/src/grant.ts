// The grant form: a time-boxed grant for an agent key, as exact caveats,
// with custody's plain-language sentence of them. Issued to the agent that asked for it (a
// pending grant request, in that request's own window `review-<id>`, which
// moves from its review to this form and back) or, with
// no request, shown once for the human to copy (a view of the main window).
//
// Before Issue, custody previews the form's caveats (grant_preview): the exact
// caveats it would sign, and every way they widen the agent's request in
// words. A widening must be confirmed on purpose (a checkbox next to the
// list); Issue sends back the caveats shown and the widenings confirmed, and
// the engine refuses anything else. Issue answers the pointer only, while
// this window is focused and armed, like Approve (gesture.ts).

import './style.css'
import { api, on, errorText, agentName, type GrantContext, type GrantPreviewView, type Gesture, type IssuedView } from './ipc'
import { pointerOnly } from './gesture'
import { h, replace, byId, say, setText, copyText, visible } from './dom'
import { emptyForm, fromCaveats, plan, MEASURES, PRESETS, VERBS, VERB_WORDS, type Caveat, type Field, type GrantFormValues, type MeasureLimit } from './caveats'
import { when, TIME_FIELD_ATTRS } from './format'
// The delay after the window (re)gains focus before Issue is enabled:
// custody's own APPROVE_DELAY, generated into custody-constants.ts.
import { APPROVE_DELAY_MS } from './custody-constants'
import { mainNav, showView } from './nav'

/** How long an issued request's result stays on screen before its window closes. */
const CLOSE_AFTER_MS = 4000

const app = byId('app')
const params = new URLSearchParams(location.hash.replace(/^#/, ''))
const requestId = params.get('request')
const agentParam = params.get('agent')

// The own form is a view of the main window: custody opens it for another
// agent by changing the fragment only, which loads nothing by itself.
window.addEventListener('hashchange', () => location.reload())

/** The page's heading: the own form carries the main window's navigation. */
function heading(onError: (m: string) => void): HTMLElement {
  const h1 = h('h1', null, 'Issue a grant')
  return requestId ? h1 : h('header', { class: 'home-head' }, h1, mainNav('grant', onError))
}

function field(label: string, control: HTMLElement, name: Field | null, help?: string): HTMLElement {
  const err = h('p', { class: 'field-error', testid: name ? `err-${name}` : undefined })
  err.hidden = true
  if (name) err.id = `err-${name}`
  return h('div', { class: 'field' }, h('label', null, h('span', { class: 'field-label' }, label), control), help ? h('p', { class: 'help' }, help) : null, err)
}

function input(id: string, attrs: Record<string, string> = {}): HTMLInputElement {
  return h('input', { id, testid: id, attrs: { type: 'text', autocomplete: 'off', spellcheck: 'false', ...attrs } })
}

async function main() {
  let ctx: GrantContext
  try {
    ctx = await api.grantContext(requestId)
  } catch (e) {
    const failed = h('p', { class: 'msg msg-error', testid: 'status' }, errorText(e))
    replace(app, heading((m) => setText(failed, m)), failed)
    return
  }
  const req = ctx.request
  let values: GrantFormValues = emptyForm()
  if (req) {
    values = { ...values, ...fromCaveats(req.review.caveats.map((c) => c.json)), agent: req.review.agent.key }
    if (!req.review.caveats.some((c) => typeof c.json === 'object' && c.json !== null && 'verbs' in c.json)) {
      values.verbs = []
    }
  } else if (agentParam) {
    values.agent = agentParam
  }

  // Controls.
  const agent = input('agent', { placeholder: 'paste the agent’s key (ed25519:…)' })
  agent.value = values.agent
  agent.readOnly = !!req
  const known = h('select', { id: 'known', testid: 'known-agents', attrs: { 'aria-label': 'Known agents' } }, h('option', { attrs: { value: '' } }, 'Pick a known agent…'))
  for (const a of ctx.known_agents) {
    const o = h('option', { attrs: { value: a.key } }, `${agentName(a)} — ${a.short}${a.waiting ? ' (waiting now)' : ''}${a.last_seen ? ` (last seen ${when(a.last_seen)})` : ''}`)
    known.append(o)
  }
  known.disabled = !!req || ctx.known_agents.length === 0
  // A request's form is for the agent that asked: no other to pick.
  known.hidden = !!req
  const label = input('agent-label', { placeholder: 'e.g. shopping assistant', maxlength: '64' })
  const existing = ctx.known_agents.find((a) => a.key === values.agent)
  if (existing?.label) label.value = existing.label
  const principal = h('select', { id: 'principal', testid: 'principal', attrs: { 'aria-label': 'Principal key' } })
  for (const k of ctx.principals) principal.append(h('option', { attrs: { value: k.public } }, `${k.label} — ${k.short}`))
  if (req) {
    principal.value = req.review.principal
    principal.disabled = true
  }
  const services = input('services', { placeholder: 'e.g. shop.example' })
  services.value = values.services
  const verbBoxes = VERBS.map((v) => {
    const box = h('input', { id: `verb-${v}`, testid: `verb-${v}`, attrs: { type: 'checkbox', value: v } })
    box.checked = values.verbs.includes(v)
    return { v, box, el: h('label', { class: 'check' }, box, h('span', null, ` ${v} `), h('span', { class: 'muted' }, VERB_WORDS[v])) }
  })
  const caps = input('capabilities', { placeholder: 'empty: every capability' })
  caps.value = values.capabilities
  const risk = h('select', { id: 'risk', testid: 'risk' }, ...['', 'low', 'medium', 'high'].map((r) => h('option', { attrs: { value: r } }, r ? `up to ${r}` : 'no ceiling')))
  risk.value = values.risk
  const currency = input('currency', { maxlength: '3', size: '4' })
  currency.value = values.currency
  const per = input('per', { inputmode: 'decimal', placeholder: 'no limit' })
  per.value = values.per
  const spend = input('spend', { inputmode: 'decimal', placeholder: 'no limit' })
  spend.value = values.spend
  // YEA limits over measures (each / total), one row per limit.
  const measureRows = h('div', { class: 'measures', testid: 'measures' })
  const measureList = h('datalist', { id: 'measure-names' }, ...MEASURES.map((m) => h('option', { attrs: { value: m } })))
  const rowsRead: Array<() => MeasureLimit> = []
  const addMeasure = (m: MeasureLimit) => {
    const kind = h('select', { testid: 'measure-kind', attrs: { 'aria-label': 'Each commit or in total' } }, h('option', { attrs: { value: 'each' } }, 'each commit at most'), h('option', { attrs: { value: 'total' } }, 'in total at most'))
    kind.value = m.kind
    const amount = h('input', { testid: 'measure-amount', attrs: { type: 'text', inputmode: 'decimal', size: '8', placeholder: '3', 'aria-label': 'Amount' } }) as HTMLInputElement
    amount.value = m.amount
    const unit = h('input', { testid: 'measure-unit', attrs: { type: 'text', size: '5', maxlength: '32', spellcheck: 'false', placeholder: 'USD / none', 'aria-label': 'Unit (a currency for spend; empty for a count)' } }) as HTMLInputElement
    unit.value = m.unit
    const of = h('input', { testid: 'measure-of', attrs: { type: 'text', size: '12', maxlength: '64', spellcheck: 'false', list: 'measure-names', placeholder: 'emails', 'aria-label': 'Measure' } }) as HTMLInputElement
    of.value = m.of
    const row = h('div', { class: 'inline measure', testid: 'measure' }, kind, amount, unit, of)
    const readRow = () => ({ kind: kind.value as MeasureLimit['kind'], of: of.value, amount: amount.value, unit: unit.value })
    const remove = h('button', { class: 'btn btn-small', testid: 'measure-remove', attrs: { type: 'button' } }, 'Remove')
    remove.addEventListener('click', () => {
      row.remove()
      rowsRead.splice(rowsRead.indexOf(readRow), 1)
      refresh()
    })
    row.append(remove)
    for (const el of [kind, amount, unit, of]) el.addEventListener('input', () => refresh())
    rowsRead.push(readRow)
    measureRows.append(row)
  }
  const addMeasureButton = h('button', { class: 'btn btn-small', testid: 'measure-add', attrs: { type: 'button' } }, 'Add a limit')
  addMeasureButton.addEventListener('click', () => {
    addMeasure({ kind: 'total', of: '', amount: '', unit: '' })
    refresh()
  })
  for (const m of values.measures) addMeasure(m)
  const presetBoxes = [...Object.keys(PRESETS), 'custom'].map((p) => {
    const r = h('input', { id: `exp-${p}`, testid: `exp-${p}`, attrs: { type: 'radio', name: 'expiry', value: p } })
    r.checked = values.expiry === p
    return { p, r, el: h('label', { class: 'check' }, r, h('span', null, p === 'custom' ? ' until…' : ` ${p}`)) }
  })
  const custom = h('input', { id: 'exp-at', testid: 'exp-at', attrs: { ...TIME_FIELD_ATTRS, 'aria-label': 'Ends at (your local time)' } })
  custom.value = values.customExpiry
  const nbf = h('input', { id: 'nbf', testid: 'nbf', attrs: { ...TIME_FIELD_ATTRS } })
  nbf.value = values.notBefore
  const note = input('note', { maxlength: '200', placeholder: 'why, for the audit log (optional)' })

  const preview = h('p', { class: 'preview', testid: 'preview' })
  const warnings = h('ul', { class: 'warnings', testid: 'form-warnings' })
  const exact = h('pre', { class: 'json', testid: 'caveats-json' })
  const checking = h('p', { class: 'muted', testid: 'preview-state' })
  const signer = h('p', { testid: 'signing-principal' })
  const widenList = h('ul', { testid: 'widening-list' })
  const widenConfirm = h('input', { id: 'confirm-widening', testid: 'confirm-widening', attrs: { type: 'checkbox' } })
  const widenBox = h(
    'section',
    { class: 'widenings warn', testid: 'widenings' },
    h('h3', null, 'This allows MORE than the agent asked for'),
    widenList,
    h('label', { class: 'check' }, widenConfirm, h('span', null, ' I mean to allow all of this')),
  )
  widenBox.hidden = true
  const issueHint = h('span', { class: 'hint', testid: 'issue-hint' })
  // The session locked or going to sleep (the service says so): issuing is
  // off, as Approve is in a review, and the page says why (the engine
  // refuses to sign meanwhile whatever the page shows).
  const held = h('p', { class: 'msg msg-warn', testid: 'session-held', attrs: { role: 'status' } })
  held.hidden = true
  // Errors show for a field once the human has typed in or left it, or
  // asked what is missing: a blank form is not a list of mistakes.
  const touched = new Set<string>()
  let showAll = false
  const missing = h('button', { class: 'btn btn-small', testid: 'show-missing', attrs: { type: 'button' } }, 'What is missing?')
  missing.hidden = true
  missing.addEventListener('click', () => {
    showAll = true
    refresh()
    app.querySelector<HTMLElement>('.field-error:not([hidden])')?.closest('.field')?.querySelector<HTMLElement>('input, select')?.focus()
  })
  const issue = h('button', { class: 'btn btn-approve', testid: 'issue', attrs: { type: 'button' } }, req ? 'Issue and send to the agent' : 'Issue grant')
  const cancel = h('button', { class: 'btn btn-default', testid: 'cancel', attrs: { type: 'button' } }, req ? 'Back to the review' : 'Cancel')
  const status = h('p', { class: 'msg', testid: 'status', attrs: { role: 'status' } })
  status.hidden = true
  const result = h('section', { class: 'result', testid: 'result' })
  result.hidden = true

  const requestBanner = req
    ? h(
        'div',
        { class: 'banner', testid: 'request-banner' },
        h('p', null, 'Answering a grant request from ', h('strong', { testid: 'request-agent' }, agentName(req.review.agent)), ' ', h('code', { class: 'muted', title: req.review.agent.key }, req.review.agent.short), ` (user ${req.review.requester.user}, pid ${req.review.requester.pid ?? 'unknown'}).`),
        h('p', null, `It asked: ${req.review.preview}.`),
        req.review.their_words ? h('p', null, 'Its reason (its words): ', h('q', null, req.review.their_words)) : null,
        values.extra.length ? h('p', { class: 'warn' }, `${values.extra.length} requested condition(s) have no field here and are kept as requested (see the exact caveats).`) : null,
      )
    : null

  replace(
    app,
    heading((m) => say(status, 'error', m)),
    requestBanner,
    h(
      'form',
      { class: 'grant-form', attrs: { novalidate: '' }, on: { submit: (e: Event) => e.preventDefault() } },
      field('Agent key', h('div', { class: 'inline' }, agent, known), 'agent', 'The agent’s holder key: the grant is for this key only.'),
      field('Your label for this agent', label, null),
      ctx.principals.length > 1 ? field('Signed by', principal, null) : null,
      field('Services', services, 'services', 'Service ids, separated by commas.'),
      h('fieldset', { class: 'field' }, h('legend', null, 'Verbs'), h('div', { class: 'checks' }, ...verbBoxes.map((b) => b.el)), h('p', { class: 'field-error', testid: 'err-verbs', attrs: { hidden: '' } })),
      field('Capabilities', caps, 'capabilities', 'Exact names, or prefixes like shop.*; empty allows every capability of these services.'),
      field('Risk ceiling', risk, null, 'Commits above it need your consent.'),
      h(
        'fieldset',
        { class: 'field' },
        h('legend', null, 'Spending'),
        h('div', { class: 'money' }, h('label', null, 'Currency ', currency), h('label', null, 'Per action ', per), h('label', null, 'In total ', spend)),
        h('p', { class: 'field-error', testid: 'err-currency', attrs: { hidden: '' } }),
        h('p', { class: 'field-error', testid: 'err-per', attrs: { hidden: '' } }),
        h('p', { class: 'field-error', testid: 'err-spend', attrs: { hidden: '' } }),
      ),
      h(
        'fieldset',
        { class: 'field' },
        h('legend', null, 'Measured limits (YEA services)'),
        measureList,
        measureRows,
        addMeasureButton,
        h('p', { class: 'help' }, 'For services that speak YEA: limits on what commits use, like 40.00 USD of spend each, or 3 emails in total. Use these or the spending fields above, not both.'),
        h('p', { class: 'field-error', testid: 'err-measures', attrs: { hidden: '' } }),
      ),
      h('fieldset', { class: 'field' }, h('legend', null, 'Expires (a grant always expires)'), h('div', { class: 'checks' }, ...presetBoxes.map((b) => b.el), custom), h('p', { class: 'field-error', testid: 'err-expiry', attrs: { hidden: '' } })),
      field('Not before (optional, your local time)', nbf, 'notBefore'),
      req ? null : field('Note (optional)', note, null),
    ),
    h('section', { class: 'preview-box' }, h('h2', null, 'This grant'), preview, signer, widenBox, warnings, h('h3', null, 'Exact caveats that will be signed'), exact, checking),
    held,
    h('div', { class: 'actions' }, cancel, issue, issueHint, missing),
    status,
    result,
  )

  const read = (): GrantFormValues => ({
    agent: agent.value,
    services: services.value,
    verbs: verbBoxes.filter((b) => b.box.checked).map((b) => b.v),
    capabilities: caps.value,
    risk: risk.value as GrantFormValues['risk'],
    currency: currency.value,
    per: per.value,
    spend: spend.value,
    expiry: presetBoxes.find((b) => b.r.checked)?.p ?? '',
    customExpiry: custom.value,
    notBefore: nbf.value,
    measures: rowsRead.map((r) => r()),
    extra: values.extra,
  })

  let issued = false
  let issuing = false
  // What custody said the current plan would sign; Issue uses exactly this.
  let shown: { key: string; plan: Caveat[]; view: GrantPreviewView } | null = null
  let wantedKey = ''
  let seq = 0
  let armedAt = performance.now()
  let focused = document.hasFocus()
  let session: 'locked' | 'asleep' | null = null
  // The "now" an expiry preset counts from: it moves only when the expiry is
  // chosen again and every 30 s, so that what was previewed stays what is
  // issued (a preset recomputed on every keystroke would change the caveats
  // between the preview and the click).
  let planNow = Math.floor(Date.now() / 1000)
  for (const b of presetBoxes) b.r.addEventListener('change', () => (planNow = Math.floor(Date.now() / 1000)), { capture: true })
  const principalValue = () => (req ? null : principal.value || null)
  const lines = (cs: unknown[]) => (cs.length ? `[\n${cs.map((c) => `  ${visible(JSON.stringify(c))}`).join(',\n')}\n]` : '[]')

  function showPreview() {
    const current = shown !== null && shown.key === wantedKey
    const v = current ? shown!.view : null
    // One caveat per line; each line made visible on its own (the line breaks are ours).
    if (v) exact.textContent = lines(v.caveats)
    // The grant in words is custody's sentence of exactly these caveats,
    // shown only while it is the current plan's (never a stale one).
    // The grant has a subject: the agent, by its one name when custody knows it.
    const who = ctx.known_agents.find((a) => a.key === agent.value.trim())
    // A name is marked as a name (quoted), as the review and home show it.
    const name = label.value.trim() || (who ? agentName(who) : req ? agentName(req.review.agent) : '')
    const subject = name ? `“${name}”` : 'The agent'
    setText(preview, v ? `${subject} ${v.preview}.` : '')
    setText(checking, v ? '' : wantedKey ? 'Checking with custody…' : '')
    const key = v ? v.principal_short : null
    setText(signer, key ? `Issue signs it with your key ${v!.principal_label ? `“${v!.principal_label}” ` : ''}${key}` : '')
    const widen = v?.widenings ?? []
    if (widenList.dataset.list !== JSON.stringify(widen)) {
      widenList.dataset.list = JSON.stringify(widen)
      replace(widenList, ...widen.map((w) => h('li', null, w)))
      widenConfirm.checked = false
    }
    widenBox.hidden = widen.length === 0
    updateIssue()
  }

  function updateIssue() {
    const current = shown !== null && shown.key === wantedKey
    const widen = current ? shown!.view.widenings : []
    const left = APPROVE_DELAY_MS - (performance.now() - armedAt)
    const ready = current && (widen.length === 0 || widenConfirm.checked) && !issued && !issuing && ctx.principals.length > 0
    issue.disabled = !ready || !focused || session !== null || left > 0
    issue.dataset.state = issue.disabled ? 'waiting' : 'ready'
    if (!issued && session === 'locked') setText(issueHint, 'Issue is off while the screen is locked.')
    else if (!issued && session === 'asleep') setText(issueHint, 'Issue is off while the computer goes to sleep.')
    else if (issued || !ready) setText(issueHint, current && widen.length && !widenConfirm.checked ? 'Confirm the widening above first.' : '')
    else if (!focused) setText(issueHint, 'Issue is off while this window is not in front.')
    else if (left > 0) setText(issueHint, `Issue in ${(left / 1000).toFixed(1)} s`)
    else setText(issueHint, 'Click, or press and hold, with the pointer.')
  }

  function refresh() {
    const pl = plan(read(), planNow, ctx.max_grant_lifetime_secs)
    replace(warnings, ...pl.warnings.map((w) => h('li', null, w)))
    warnings.hidden = pl.warnings.length === 0
    exact.textContent = lines(pl.caveats)
    for (const el of app.querySelectorAll<HTMLElement>('.field-error')) {
      const name = el.dataset.testid?.replace(/^err-/, '') as Field
      const msg = showAll || touched.has(name) ? pl.errors[name] : undefined
      el.hidden = !msg
      setText(el, msg ?? '')
    }
    missing.hidden = pl.ok || showAll
    const key = pl.ok ? JSON.stringify([agent.value.trim(), pl.caveats, principalValue()]) : ''
    if (key !== wantedKey) {
      wantedKey = key
      if (key && !issued) {
        const mine = ++seq
        const planned = pl.caveats
        api
          .grantPreview({ agent: agent.value.trim(), caveats: planned, principal: principalValue(), request: req ? req.id : null })
          .then((view) => {
            if (mine !== seq) return
            shown = { key, plan: planned, view }
            showPreview()
          })
          .catch((e) => {
            if (mine !== seq) return
            shown = null
            say(status, 'error', errorText(e))
            showPreview()
          })
      }
    }
    showPreview()
    return pl
  }
  window.addEventListener('focus', () => {
    focused = true
    armedAt = performance.now()
    updateIssue()
  })
  window.addEventListener('blur', () => {
    focused = false
    updateIssue()
  })
  widenConfirm.addEventListener('change', () => updateIssue())
  // The session's lock and sleep, as the service follows it: Issue is off
  // while locked; on unlock the whole delay again (the service checks the same).
  const followSession = async () => {
    try {
      const now = (await api.status()).session ?? null
      if (session !== null && now === null) armedAt = performance.now()
      session = now
    } catch {
      return
    }
    held.hidden = session === null || issued
    setText(
      held,
      session === 'asleep'
        ? 'The computer is going to sleep: issuing is off until it wakes up. Nothing is signed meanwhile.'
        : session === 'locked'
          ? 'The screen is locked: issuing is off until you unlock it. Nothing is signed meanwhile.'
          : '',
    )
    updateIssue()
  }
  void on('status-changed', () => void followSession())
  void followSession()
  setInterval(updateIssue, 100)
  if (ctx.principals.length === 0) {
    say(status, 'error', 'There is no principal key to sign with yet: create one in Settings first.')
  }

  // Each error belongs to its field: its id is named by the field's
  // controls (aria-describedby), and it is marked touched from them.
  const fieldsOf = (el: Element | null): string[] =>
    [...(el?.closest('.field')?.querySelectorAll<HTMLElement>('.field-error') ?? [])].map((e) => e.dataset.testid?.replace(/^err-/, '') ?? '')
  for (const err of app.querySelectorAll<HTMLElement>('.field-error')) {
    const name = err.dataset.testid?.replace(/^err-/, '') ?? ''
    err.id = `err-${name}`
    err.setAttribute('aria-live', 'polite')
  }
  const byField: Record<string, HTMLElement[]> = { agent: [agent], services: [services], capabilities: [caps], currency: [currency], per: [per], spend: [spend], notBefore: [nbf], verbs: verbBoxes.map((b) => b.box), expiry: [custom, ...presetBoxes.map((b) => b.r)] }
  for (const [name, els] of Object.entries(byField)) for (const el of els) el.setAttribute('aria-describedby', `err-${name}`)
  const touch = (e: Event) => {
    const t = e.target as HTMLElement
    const own = Object.entries(byField).find(([, els]) => els.includes(t))?.[0]
    for (const f of own ? [own] : fieldsOf(t)) touched.add(f)
  }
  app.addEventListener('input', (e) => {
    touch(e)
    refresh()
  })
  app.addEventListener('change', (e) => {
    touch(e)
    refresh()
  })
  app.addEventListener('focusout', (e) => {
    const t = e.target as HTMLInputElement
    // Leaving a field empty that was never typed in is not yet a mistake.
    if (t.value === undefined || t.value !== '' || touched.size > 0) touch(e)
    refresh()
  })
  known.addEventListener('change', () => {
    if (known.value) {
      agent.value = known.value
      const a = ctx.known_agents.find((x) => x.key === known.value)
      label.value = a?.label ?? ''
    }
    refresh()
  })
  const pickCustom = () => {
    const b = presetBoxes.find((x) => x.p === 'custom')
    if (b) b.r.checked = true
    refresh()
  }
  custom.addEventListener('focus', pickCustom)
  custom.addEventListener('input', pickCustom)
  // A request's form shares its review's window: back goes to the review
  // (closed once issued); the own form goes back home.
  const back = (): Promise<void> => {
    if (!req) return showView('home')
    if (issued) return api.windowClose()
    location.assign(`review.html#${encodeURIComponent(req.id)}`)
    return Promise.resolve()
  }
  cancel.addEventListener('click', () => void back().catch((e) => say(status, 'error', errorText(e))))
  pointerOnly(issue, () => !issue.disabled, async (gesture: Gesture) => {
    const s = shown
    if (issued) return
    if (!s || s.key !== wantedKey) {
      say(status, 'warn', 'Custody is still checking the latest change: look at the preview, then issue again.')
      return
    }
    const widenings = s.view.widenings.length && widenConfirm.checked ? s.view.widenings : []
    issue.disabled = true
    issuing = true
    say(status, 'info', 'Signing…')
    try {
      const r: IssuedView = await api.grantIssue({
        agent: agent.value.trim(),
        caveats: s.plan,
        shown: s.view.caveats,
        widenings,
        gesture,
        principal: principalValue(),
        note: req ? null : note.value.trim() || null,
        request: req ? req.id : null,
      })
      issued = true
      const wanted = label.value.trim()
      const had = ctx.known_agents.find((a) => a.key === agent.value.trim())?.label ?? ''
      if (wanted !== had) {
        await api.agentLabelSet(agent.value.trim(), wanted || null).catch((e) => say(status, 'warn', `Label not saved: ${errorText(e)}`))
      }
      showResult(r)
      // The request is answered: its window closes after the result was read.
      if (req) setTimeout(() => void api.windowClose().catch(() => {}), CLOSE_AFTER_MS)
    } catch (e) {
      say(status, 'error', errorText(e))
      armedAt = performance.now()
    } finally {
      issuing = false
      updateIssue()
    }
  })

  function showResult(r: IssuedView) {
    for (const el of app.querySelectorAll<HTMLInputElement | HTMLSelectElement | HTMLButtonElement>('form input, form select')) el.disabled = true
    issue.disabled = true
    setText(cancel, 'Close')
    const words = h('ul', null, ...r.caveat_words.map((w) => h('li', null, w)))
    if (r.sent_to_agent) {
      say(status, 'ok', 'Issued and sent to the waiting agent.')
      replace(result, h('h2', null, 'Issued'), h('p', { testid: 'issued-preview' }, `The grant ${r.preview}.`), words)
    } else {
      say(status, 'ok', 'Issued. Give this token to the agent; it is shown only now (the audit log keeps its id).')
      const token = h('textarea', { class: 'token', testid: 'token', attrs: { readonly: '', rows: '4', 'aria-label': 'Grant token' } })
      token.value = r.token ?? ''
      const copied = h('span', { class: 'muted', testid: 'copied' })
      const copy = h('button', { class: 'btn', testid: 'copy-token', attrs: { type: 'button' } }, 'Copy token')
      copy.addEventListener('click', async () => {
        token.select()
        setText(copied, (await copyText(token.value)) ? ' Copied.' : ' Select the token and copy it.')
      })
      replace(
        result,
        h('h2', null, 'Issued'),
        h('p', { testid: 'issued-preview' }, `The grant ${r.preview}.`),
        words,
        r.warnings.length ? h('ul', { class: 'warnings' }, ...r.warnings.map((w) => h('li', null, w))) : null,
        token,
        h('div', { class: 'actions' }, copy, copied),
      )
    }
    result.append(
      h('div', { class: 'actions' }, h('button', { class: 'btn', testid: 'new-grant', attrs: { type: 'button' }, on: { click: () => { location.hash = ''; location.reload() } } }, 'Issue another grant')),
    )
    result.hidden = false
  }

  refresh()
  setInterval(() => {
    planNow = Math.floor(Date.now() / 1000)
    if (!issued) refresh()
  }, 30_000)
  if (req) {
    void on<string>('pending-withdrawn', (wid) => {
      if (wid === req.id && !issued && !issuing) {
        issued = true
        issue.disabled = true
        say(status, 'warn', 'This request is no longer waiting: it was decided in its review window, expired, or the agent withdrew it. Nothing was issued from this form.')
      }
    })
  }
  ;(req ? services : agent.value ? services : agent).focus()
}

void main()
