// The review window: one request, shown in ARCHITECTURE.md's order, from the
// engine's review (built from the proposal itself, re-verified, display-safe).
//
// Laid out as a person decides: the amount, what (the service's words),
// why custody asks (custody's own reading of the grants it issued), who
// asks, then every detail; Deny, Approve and the status sit in a footer that
// is always on screen (the body scrolls, the footer never). A second kind of
// review plugs in as one more `Body` (see `bodies`).
//
// Deny is the default (focused; Esc denies, except while typing in a field). Approve is enabled only after
// APPROVE_DELAY_MS since the window appeared or regained focus, and is
// disabled while the window is not focused (anti-clickjacking; the backend
// checks the same delay and the focus). Focus is the window's own, as the
// app reports it (tauri://focus, tauri://blur: the same events the service
// is told), so Tab moving within the page, or out to the browser chrome,
// never disarms it; Tab cycles within the page. Approve answers the pointer only
// (gesture.ts): Tab then Space or Enter never approves. A high-risk,
// irreversible or cost-less-but-charging proposal needs a second, explicit
// confirmation. "Deny and pause this agent for 1 hour" sits next to Deny:
// never the default, never approving; the agent's next requests are then
// refused without being shown.

import './style.css'
import { api, on, onWindowFocus, errorCode, errorText, agentName, type Gesture, type PendingView, type Review } from './ipc'
import { pointerOnly } from './gesture'
import { h, replace, byId, row, say, setText } from './dom'
import { when, span } from './format'
import { jobPart, phraseMatches } from './job'
import { forAWhilePart } from './for_a_while'
// The delay after the window (re)gains focus before Approve is enabled:
// custody's own APPROVE_DELAY, generated into custody-constants.ts.
import { APPROVE_DELAY_MS } from './custody-constants'

/** The delay before the second confirmation's button is enabled. */
export const CONFIRM_DELAY_MS = 1000
/** How long a decision's result stays on screen before the window closes. */
export const CLOSE_AFTER_MS = 4000

const app = byId('app')
const id = decodeURIComponent(location.hash.replace(/^#/, ''))

let closed = false
let busy = false
let armedAt = performance.now()
let focused = true
let confirmShownAt = 0
/** The session is locked or going to sleep (the service says so): no Approve. */
let held: 'locked' | 'asleep' | null = null

function opSymbolClass(op: string): string {
  return /^(create|update|delete|send|charge|other)$/.test(op) ? `op op-${op}` : 'op op-other'
}

function who(r: Review): HTMLElement {
  const q = r.requester
  return h(
    'div',
    { class: 'who' },
    h('span', { testid: 'requester' }, `user ${q.user} (uid ${q.uid}), pid ${q.pid ?? 'unknown'}, ${q.exe ?? 'executable unknown'}`),
    h('span', { class: 'muted' }, ' — executable not verified'),
    ...(q.chain_line
      ? [
          h('br', null),
          h('span', { testid: 'requester-chain' }, `from ${q.chain_line}`),
          h('span', { class: 'muted' }, ' — not verified'),
        ]
      : []),
  )
}

/** The agent's one name as a name in a sentence: quoted, as home and the notifications show it. */
function named(a: Review['agent']): string {
  return `“${agentName(a)}”`
}

/**
 * The agent, named by the human here; `renamed` is told a name saved here.
 * `relabel` shows the name custody gives it now (renamed anywhere).
 */
function agent(r: Review, renamed: (label: string | null) => void): { el: HTMLElement; relabel: (label: string | null) => void } {
  // The human's name for it leads; the key is the detail after it.
  const shown = h('strong', { class: 'label', testid: 'agent-label' }, r.agent.label ? `“${r.agent.label}” ` : '')
  const nameMsg = h('span', { class: 'muted', testid: 'agent-name-status' })
  const name = h('input', { testid: 'agent-name', attrs: { type: 'text', maxlength: '64', spellcheck: 'false', 'aria-label': 'Your name for this agent', placeholder: 'e.g. shopping bot' } }) as HTMLInputElement
  name.value = r.agent.label ?? ''
  // Enter in the field saves the name (and only that: it decides nothing).
  name.addEventListener('keydown', (ev) => {
    if (ev.key === 'Enter') {
      ev.preventDefault()
      ev.stopPropagation()
      void save()
    }
  })
  const save = async () => {
    const label = name.value.trim()
    try {
      await api.agentLabelSet(r.agent.key, label || null)
      setText(nameMsg, label ? ' Saved: every review of this key shows it.' : ' Name removed.')
      // The new name, everywhere in this review (custody's own view of it
      // follows with pending-changed).
      renamed(label || null)
    } catch (e) {
      setText(nameMsg, ` ${errorText(e)}`)
    }
  }
  const el = h(
    'div',
    { class: 'agent' },
    shown,
    h('code', { testid: 'agent-key', title: r.agent.key }, r.agent.short),
    r.agent.known
      ? h('span', { class: 'muted' }, ' — granted to before')
      : h('span', { class: 'badge badge-warn', testid: 'agent-new' }, 'never granted to before'),
    h('div', null, h('span', { class: 'muted' }, 'Its words: '), h('strong', { testid: 'agent-phrase' }, r.agent.phrase), h('span', { class: 'muted' }, ' (the same wherever this key appears)')),
    r.activity ? h('div', { class: 'muted', testid: 'agent-activity' }, r.activity.words) : null,
    h(
      'details',
      { testid: 'agent-naming' },
      h('summary', null, r.agent.label ? 'Rename this agent' : 'Name this agent'),
      h('div', { class: 'inline' }, name, h('button', { class: 'btn btn-small', testid: 'agent-name-save', attrs: { type: 'button' }, on: { click: () => void save() } }, 'Save name'), nameMsg),
    ),
  )
  return { el, relabel: (label: string | null) => setText(shown, label ? `“${label}” ` : '') }
}

function principal(r: Review): HTMLElement {
  return h(
    'span',
    { class: 'principal' },
    r.principal_label ? h('span', { class: 'label' }, `“${r.principal_label}” `) : null,
    h('code', { title: r.principal }, r.principal_short),
  )
}

/** What a kind of review shows above its details, and its details. */
interface Body {
  title: string
  kind: string
  headline: string
  top: (HTMLElement | null)[]
  details: (HTMLElement | null)[]
}

function consentBody(r: Review): Body {
  const facts = h('dl', { class: 'facts' })
  facts.append(
    ...row('Service', h('span', { class: 'ident' }, r.service), 'service'),
    ...row('Capability', h('span', { class: 'ident' }, r.capability), 'capability'),
    ...(r.dialect === 'yea1'
      ? // YEA: what the commit uses, every measure on its own line (money as money).
        row(
          'Uses',
          r.uses.length
            ? h('ul', { class: 'uses' }, ...r.uses.map((u) => h('li', { testid: 'use', class: u.money ? 'use-money' : 'use-count' }, u.words)))
            : r.cost,
          'cost',
          'cost',
        )
      : row('Cost', r.cost, 'cost', r.cost_money === null && r.cost !== 'free' ? 'cost cost-unstated' : 'cost')),
    ...row('Risk', h('span', { class: `badge risk-${/^(low|medium|high)$/.test(r.risk) ? r.risk : 'high'}` }, r.risk), 'risk'),
    ...row(
      'Undo',
      r.irreversible ? h('strong', { class: 'irreversible' }, 'IRREVERSIBLE — cannot be undone') : `can be undone within ${r.undo}`,
      'undo',
    ),
    ...row('Signed with', principal(r), 'principal'),
  )
  const effects = h(
    'section',
    { class: 'effects' },
    h('h2', { testid: 'effect-count' }, `What it does — every effect (${r.effects.length} effect${r.effects.length === 1 ? '' : 's'})`),
    r.effects.length
      ? h('ol', { testid: 'effects' }, ...r.effects.map((e) => h('li', { class: opSymbolClass(e.op) }, e.line)))
      : h('p', { testid: 'effects', class: 'muted' }, 'The proposal lists no effects.'),
  )
  return {
    // A job's "service" is its server's key: the headline names the tool.
    title: r.job ? `Run ${r.job.tool} for ${r.cost}? — Parley Custody` : `Approve ${r.cost} at ${r.service}? — Parley Custody`,
    kind: r.job ? `The job server ${named(r.agent)} asks you to approve a plan` : `${named(r.agent)} asks for your consent`,
    headline: r.job ? `${r.job.tool}: ${r.cost}` : `${r.cost} at ${r.service}`,
    top: [theirWords(r, 'What the service says it is (its words, not checked)'), why(r)],
    details: [facts, effects, h('p', { class: 'hash' }, 'Proposal hash ', h('code', { testid: 'hash', title: r.hash }, `${r.hash_short}…`))],
  }
}

function grantBody(r: Review): Body {
  const facts = h('dl', { class: 'facts' })
  facts.append(
    ...row('Services', h('span', { class: 'ident' }, r.service || '(every service)'), 'service'),
    ...row('In words', r.preview, 'preview', 'preview'),
    ...row('Grant ends', when(r.expires), 'grant-exp'),
    // Issue 30: revoking is an extension; say what it cannot do.
    ...row('Revoking', 'You can revoke it in the audit log, but services that do not check revocations still accept it until it ends.', 'revoke-limit'),
    ...row('Signed with', principal(r), 'principal'),
  )
  const caveats = h(
    'section',
    { class: 'effects' },
    h('h2', null, 'Exactly what would be signed'),
    h('ol', { testid: 'caveats' }, ...r.caveats.map((c) => h('li', null, h('span', null, c.words), h('code', { class: 'json' }, JSON.stringify(c.json))))),
  )
  return {
    title: `Grant for ${r.service || 'every service'}? — Parley Custody`,
    kind: 'An agent asks for a grant',
    // A subject: "shopping bot may ask for offers…", never a bare "may…".
    headline: `${named(r.agent)} ${r.preview}`,
    top: [theirWords(r, 'The agent’s reason (its words, not checked)')],
    details: [facts, caveats],
  }
}

/** Every kind of review, by `Review.kind`. */
const bodies: Record<string, (r: Review) => Body> = { consent: consentBody, grant: grantBody }

function theirWords(r: Review, heading: string): HTMLElement | null {
  return r.their_words
    ? h(
        'section',
        { class: 'their-words' },
        h('h2', null, heading),
        h('blockquote', { testid: 'summary' }, r.their_words),
        r.summary_differs ? h('p', { class: 'warn' }, 'This differs from the summary in the proposal itself.') : null,
      )
    : null
}

/** Why custody asks, in its own words (computed by the service). */
function why(r: Review): HTMLElement | null {
  return r.why ? h('section', { class: 'why' }, h('h2', null, 'Why custody asks you'), h('p', { testid: 'why', attrs: { 'data-rule': r.why.rule } }, r.why.words)) : null
}

/** The next element Tab reaches, cycling within the page. */
function tabbables(): HTMLElement[] {
  return [...document.querySelectorAll<HTMLElement>('button, input, select, textarea, summary, a[href], [tabindex]')].filter(
    (el) => el.tabIndex >= 0 && !(el as HTMLButtonElement).disabled && el.getClientRects().length > 0,
  )
}

function render(p: PendingView): void {
  const r = p.review
  const consent = r.kind === 'consent'
  const body = (bodies[r.kind] ?? grantBody)(r)
  // A YEA job plan (job.ts): its tool, input and the phrase to type.
  const job = jobPart(r)
  // Approve for a while (for_a_while.ts): consents only, never a job; shown
  // only when custody offers it.
  const forAWhile = consent && !job ? forAWhilePart(p) : null
  document.title = body.title

  const countdown = h('p', { class: 'countdown', testid: 'countdown' })
  const warnings = r.warnings.length ? h('ul', { class: 'warnings', testid: 'warnings' }, ...r.warnings.map((w) => h('li', null, w))) : null
  // Whether the OS asks for the password after Approve, said before the human decides.
  const stepUp = h('p', { class: p.step_up.required ? 'step-up' : 'step-up step-up-off', testid: 'step-up' }, p.step_up.words)

  const deny = h('button', { id: 'deny', class: 'btn btn-default', testid: 'deny', attrs: { type: 'button', autofocus: '' } }, 'Deny')
  const denyPause = h('button', { class: 'btn', testid: 'deny-pause', attrs: { type: 'button', title: 'Deny this request; the agent’s requests are refused without being shown for 1 hour (resume it in the audit view)' } }, 'Deny and pause agent 1 h')
  const approve = h('button', { id: 'approve', class: 'btn btn-approve', testid: 'approve', attrs: { type: 'button', title: 'Click, or press and hold, with the pointer' } }, consent ? 'Approve' : 'Approve as requested')
  approve.disabled = true
  const hint = h('span', { class: 'hint', testid: 'approve-hint' })
  const edit = consent ? null : h('button', { class: 'btn', testid: 'edit-grant', attrs: { type: 'button' } }, 'Edit in grant form…')
  const reason = h('input', { id: 'reason', attrs: { type: 'text', maxlength: '200', placeholder: 'Reason for the agent (optional)', 'aria-label': 'Reason for denying' } })

  const confirmYes = h('button', { class: 'btn btn-approve', testid: 'confirm-approve', attrs: { type: 'button' } }, consent ? `Yes, approve ${r.cost}` : 'Yes, approve')
  const confirmNo = h('button', { class: 'btn btn-default', testid: 'confirm-deny', attrs: { type: 'button' } }, 'No, deny')
  const confirm = h(
    'div',
    { class: 'confirm', testid: 'confirm' },
    h('p', null, r.irreversible && r.risk === 'high' ? 'This is HIGH RISK and cannot be undone.' : r.irreversible ? 'This cannot be undone.' : 'This is HIGH RISK.', ' Approve it anyway?'),
    h('div', { class: 'actions' }, confirmNo, confirmYes),
  )
  confirm.hidden = true
  const status = h('p', { class: 'msg', testid: 'status', attrs: { role: 'status' } })
  status.hidden = true
  // When the OS could not ask for the password: what happened and what to do.
  const guidance = h('div', { class: 'msg msg-warn guidance', testid: 'step-up-guidance', attrs: { role: 'alert' } })
  guidance.hidden = true
  const retry = h('button', { class: 'btn btn-small', testid: 'step-up-retry', attrs: { type: 'button' } }, 'I started it: approve again')
  // Other requests waiting (any agent): a count and the way to them.
  // Its line keeps its height whether or not others wait: a request that
  // arrives never moves Deny or Approve under the pointer.
  const queue = h('p', { class: 'queue queue-none', testid: 'queue' })
  const drawQueue = async () => {
    if (closed) return
    try {
      const s = await api.status()
      const more = Math.max(0, s.pending - 1)
      queue.classList.toggle('queue-none', more === 0)
      replace(
        queue,
        `${more} more waiting `,
        h('button', { class: 'btn btn-small', testid: 'queue-open', attrs: { type: 'button' }, on: { click: () => void api.openWindow('main').catch(() => {}) } }, 'Show all'),
      )
    } catch {
      queue.classList.add('queue-none')
    }
  }
  // Requests alike to this one (same agent, user, service and capability)
  // waiting now: listed here, deniable together; each is approved only in
  // its own review.
  const alike = h('section', { class: 'alike', testid: 'alike' })
  alike.hidden = true
  const denyAlike = h('button', { class: 'btn', testid: 'deny-alike', attrs: { type: 'button' } }, 'Deny all')
  const drawAlike = async () => {
    if (closed) return
    let others: PendingView[]
    try {
      others = await api.reviewAlike(p.id)
    } catch {
      return
    }
    alike.hidden = others.length === 0
    if (!others.length) return
    setText(denyAlike, `Deny this and the ${others.length} alike`)
    replace(
      alike,
      h('h2', null, `${others.length} more ${others.length === 1 ? 'request' : 'requests'} like this one from this agent ${others.length === 1 ? 'is' : 'are'} waiting`),
      h(
        'ul',
        { testid: 'alike-list' },
        ...others.map((o) =>
          h(
            'li',
            { testid: 'alike-item', attrs: { 'data-id': o.id } },
            h('strong', null, o.review.cost || o.review.preview),
            ' — ',
            o.review.their_words,
            ' ',
            o.review.hash_short ? h('code', { title: o.review.hash }, `${o.review.hash_short}…`) : null,
            h('span', { class: 'muted' }, ` asked ${when(o.received_at)}`),
          ),
        ),
      ),
      h('p', { class: 'help' }, 'Approving stays one request at a time, each in its own review.'),
      h('div', { class: 'actions' }, denyAlike),
    )
  }

  const footer = h(
    'footer',
    { class: 'review-foot', testid: 'footer' },
    guidance,
    status,
    forAWhile?.footLine ?? null,
    h('div', { class: 'actions' }, deny, denyPause, edit, approve),
    confirm,
    h('div', { class: 'foot-line' }, hint, queue),
  )
  const asked = agent(r, (label) => void applyName(label, label ?? r.agent.phrase))
  const kindLine = h('div', { class: 'kind', testid: 'kind' }, body.kind)
  const headline = h('h1', { testid: 'headline' }, body.headline)
  // The agent renamed while this review is open (here, in the audit view,
  // in another review): custody's name for it now, in every line that
  // names it, the approve-for-a-while offer's words included.
  const applyName = async (label: string | null, name: string | undefined) => {
    const was = agentName(r.agent)
    r.agent.label = label
    r.agent.name = name
    asked.relabel(label)
    if (agentName(r.agent) === was) return
    const b = (bodies[r.kind] ?? grantBody)(r)
    setText(kindLine, b.kind)
    setText(headline, b.headline)
    document.title = b.title
    await forAWhile?.refresh()
  }
  let renaming = 0
  const renamed = async () => {
    const mine = ++renaming
    let now: PendingView | null
    try {
      now = await api.reviewGet(p.id)
    } catch {
      return
    }
    if (!now || mine !== renaming || closed || now.review.agent.key !== r.agent.key) return
    await applyName(now.review.agent.label ?? null, now.review.agent.name)
  }
  replace(
    app,
    h('header', { class: 'review-head' }, kindLine, headline),
    forAWhile?.section ?? null,
    ...body.top,
    warnings,
    job?.section ?? null,
    h('section', { class: 'requested' }, h('h2', null, 'Asked by'), who(r), asked.el),
    ...body.details,
    countdown,
    stepUp,
    h('div', { class: 'reason' }, reason),
    alike,
    footer,
  )
  // The footer stays on screen over the end of the page: whatever is
  // scrolled into view (a field Tab reaches, a control the human goes to)
  // stops above it, never under it.
  const padBottom = () => (document.documentElement.style.scrollPaddingBottom = `${footer.offsetHeight + 8}px`)
  padBottom()
  new ResizeObserver(padBottom).observe(footer)
  // Deny has the focus, but the review opens at its top: the headline and
  // the facts first (focusing the button must not scroll the page to it).
  deny.focus({ preventScroll: true })
  window.scrollTo(0, 0)
  void drawAlike()
  void drawQueue()
  void on('pending-changed', () => {
    void drawAlike()
    void drawQueue()
    void renamed()
  })

  const setBusy = (b: boolean) => {
    busy = b
    update()
  }
  const finish = (text: string, kind: 'ok' | 'warn' | 'error' | 'info') => {
    closed = true
    confirm.hidden = true
    guidance.hidden = true
    say(status, kind, text)
    update()
  }
  // The decision stays on screen long enough to read before the window closes.
  const closeSoon = () => setTimeout(() => void api.windowClose().catch(() => {}), CLOSE_AFTER_MS)
  let cannotAsk = false

  async function decide(approveIt: boolean, confirmed: boolean, gesture: Gesture | null = null) {
    if (closed || busy) return
    // A job is approved with its phrase typed (job.ts); custody checks it too.
    const typed = approveIt && job ? job.typed() : null
    if (approveIt && job && r.job && !phraseMatches(typed ?? '', r.job.phrase)) {
      say(status, 'error', `Type “${r.job.phrase}” to approve this plan.`)
      return
    }
    setBusy(true)
    try {
      const d = await api.reviewDecide(p.id, approveIt, confirmed, approveIt ? gesture : null, approveIt ? null : reason.value || null, typed, approveIt ? (forAWhile?.chosen() ?? null) : null)
      finish(d.message, d.outcome === 'approved' || d.outcome === 'issued' ? 'ok' : 'info')
      closeSoon()
    } catch (e) {
      const msg = errorText(e)
      if (errorCode(e) === 'gone') finish(msg, 'warn')
      else if (errorCode(e) === 'not_authenticated' && approveIt) {
        // The OS could not ask: say so and what to do; Approve stays off
        // until the human says the agent runs.
        cannotAsk = true
        status.hidden = true
        replace(guidance, h('p', null, msg), h('div', { class: 'actions' }, retry))
        guidance.hidden = false
        confirm.hidden = true
      }
      // Another approval's OS prompt is open: this request still waits.
      else say(status, errorCode(e) === 'busy' ? 'warn' : 'error', msg)
      if (approveIt) armedAt = performance.now()
    } finally {
      setBusy(false)
    }
  }
  retry.addEventListener('click', () => {
    cannotAsk = false
    guidance.hidden = true
    armedAt = performance.now()
    update()
  })

  async function denyAndPause() {
    if (closed || busy) return
    setBusy(true)
    try {
      const d = await api.reviewDenyAndPause(p.id)
      finish(d.message, 'info')
      closeSoon()
    } catch (e) {
      const msg = errorText(e)
      if (errorCode(e) === 'gone') finish(msg, 'warn')
      else say(status, 'error', msg)
    } finally {
      setBusy(false)
    }
  }

  async function denyAllAlike() {
    if (closed || busy) return
    setBusy(true)
    try {
      const d = await api.reviewDenyAlike(p.id, reason.value || null)
      alike.hidden = true
      finish(d.message, 'info')
      closeSoon()
    } catch (e) {
      const msg = errorText(e)
      if (errorCode(e) === 'gone') finish(msg, 'warn')
      else say(status, 'error', msg)
    } finally {
      setBusy(false)
    }
  }

  deny.addEventListener('click', () => void decide(false, false))
  denyAlike.addEventListener('click', () => void denyAllAlike())
  denyPause.addEventListener('click', () => void denyAndPause())
  confirmNo.addEventListener('click', () => void decide(false, false))
  pointerOnly(approve, () => !approve.disabled && !closed && !busy, (gesture) => {
    if (r.needs_second_confirmation) {
      confirm.hidden = false
      confirmShownAt = performance.now()
      confirmNo.focus()
      update()
      return
    }
    void decide(true, false, gesture)
  })
  pointerOnly(confirmYes, () => !confirmYes.disabled && !closed && !busy, (gesture) => void decide(true, true, gesture))
  // The form that answers this request opens in this same window (one
  // window per request; custody lets review-<id> answer <id> only), and
  // comes back here with "Back to the review".
  edit?.addEventListener('click', () => location.assign(`grant.html#request=${encodeURIComponent(p.id)}`))
  document.addEventListener('keydown', (ev) => {
    const typing = ev.target instanceof HTMLInputElement || ev.target instanceof HTMLTextAreaElement || ev.target instanceof HTMLSelectElement
    if (ev.key === 'Escape') {
      ev.preventDefault()
      // Esc while typing leaves the field; it never denies from there.
      if (typing) (ev.target as HTMLElement).blur()
      else void decide(false, false)
    } else if (ev.key === 'Tab') {
      // Tab cycles within the page: focus never leaves it for the webview's chrome.
      const list = tabbables()
      if (!list.length) return
      const at = list.indexOf(document.activeElement as HTMLElement)
      const next = ev.shiftKey ? (at <= 0 ? list.length - 1 : at - 1) : at === list.length - 1 || at < 0 ? 0 : at + 1
      if ((ev.shiftKey && at <= 0) || (!ev.shiftKey && (at === list.length - 1 || at < 0))) {
        ev.preventDefault()
        list[next].focus()
      }
    }
  })

  function update() {
    const now = performance.now()
    const left = APPROVE_DELAY_MS - (now - armedAt)
    const secsLeft = p.closes_at - Date.now() / 1000
    if (!closed && secsLeft <= 0) {
      finish('Expired: the request closed itself. Nothing was signed.', 'warn')
    }
    approve.disabled = closed || busy || !focused || held !== null || left > 0 || !confirm.hidden || cannotAsk
    approve.dataset.state = approve.disabled ? 'waiting' : 'ready'
    if (closed) hint.textContent = ''
    else if (held === 'locked') hint.textContent = 'Approve is off while the screen is locked.'
    else if (held === 'asleep') hint.textContent = 'Approve is off while the computer goes to sleep.'
    else if (cannotAsk) hint.textContent = 'Approve is off until an authentication agent runs.'
    else if (!focused) hint.textContent = 'Approve is off while this window is not in front.'
    else if (left > 0) hint.textContent = `Approve in ${(left / 1000).toFixed(1)} s`
    else hint.textContent = 'Click, or press and hold, with the pointer: the keyboard cannot approve.'
    const confirmLeft = CONFIRM_DELAY_MS - (now - confirmShownAt)
    confirmYes.disabled = closed || busy || !focused || held !== null || confirmLeft > 0
    deny.disabled = closed || busy
    denyPause.disabled = closed || busy
    denyAlike.disabled = closed || busy
    confirmNo.disabled = closed || busy
    retry.disabled = closed || busy
    if (edit) edit.disabled = closed || busy
    reason.disabled = closed
    forAWhile?.disable(closed || busy)
    setText(
      countdown,
      closed
        ? 'This request is closed.'
        : `Closes in ${span(secsLeft)} (at ${when(p.closes_at)}); it closes itself then, and nothing is signed. Closing this window does not deny it: it stays waiting, in home and the tray.`,
    )
  }
  onRearm = () => update()
  update()
  setInterval(update, 100)

  void on<string>('pending-withdrawn', (wid) => {
    if (wid === p.id && !closed) {
      finish('This request is no longer waiting: it was decided, expired, or the agent withdrew it.', 'warn')
    }
  })
}

let onRearm: () => void = () => {}
// The session's lock and sleep, as the service follows it: disarmed while
// locked; on unlock the whole delay again (the service checks the same).
async function followSession() {
  try {
    const now = (await api.status()).session ?? null
    if (held !== null && now === null) armedAt = performance.now()
    held = now
    onRearm()
  } catch {
    // The service refuses an approval while locked whatever this page shows.
  }
}
void on('status-changed', () => void followSession())
function arm() {
  armedAt = performance.now()
  focused = true
  onRearm()
}
function disarm() {
  focused = false
  onRearm()
}
// The window's own focus, as the app reports it (the service hears the same).
void onWindowFocus((f) => (f ? arm() : disarm()))
// The document taking the focus back restarts the delay too (the safe
// direction); the document losing it (Tab to the webview's chrome) is not
// the window leaving the front, and disarms nothing.
window.addEventListener('focus', arm)
// A minimized or hidden window is not in front.
document.addEventListener('visibilitychange', () => {
  if (document.visibilityState !== 'visible') disarm()
})

async function main() {
  if (!/^q\d{1,22}$/.test(id)) {
    replace(app, h('p', { class: 'msg msg-error' }, 'No request to show.'))
    return
  }
  try {
    const p = await api.reviewGet(id)
    if (!p) {
      closed = true
      replace(
        app,
        h('h1', null, 'Nothing to review'),
        h('p', { class: 'msg msg-warn', testid: 'status' }, 'This request is no longer waiting: it was decided, expired, or the agent withdrew it.'),
        h('div', { class: 'actions' }, h('button', { class: 'btn', attrs: { type: 'button' }, on: { click: () => void api.windowClose() } }, 'Close')),
      )
      return
    }
    armedAt = performance.now()
    // A window that opened behind another one is not armed until it is brought to the front.
    focused = document.hasFocus()
    render(p)
    void followSession()
  } catch (e) {
    replace(app, h('p', { class: 'msg msg-error', testid: 'status' }, errorText(e)))
  }
}

void main()
