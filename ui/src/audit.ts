// The audit view of the main window: every event, newest first, with filters; the grants and
// consents still live, in plain words; the chain's verification; export;
// the paused agents (refused without a prompt) with Resume, and a Pause
// action for every agent the human has dealt with.
// Rows are evidence stored exactly as received: the backend makes them
// display-safe, and they are rendered as text only.

import './style.css'
import { api, on, errorText, agentName, type AuditFilter, type AuditView, type EventView, type EventKind, type PausesView } from './ipc'
import { h, replace, byId, say, setText } from './dom'
import { when, whenExact, span, fromTimeInput, TIME_FIELD_ATTRS } from './format'
import { mainNav } from './nav'

export const KIND_WORDS: Record<EventKind, string> = {
  grant_issued: 'Grant issued',
  grant_denied: 'Grant denied',
  consent_approved: 'Consent approved',
  consent_denied: 'Consent denied',
  request_rejected: 'Request rejected (never shown)',
  request_expired: 'Request expired',
  request_cancelled: 'Request withdrawn',
  key_created: 'Key created',
  key_imported: 'Key imported',
  key_deleted: 'Key deleted',
  rejections_summarized: 'Rejections summarized',
  retention_changed: 'Retention changed',
  cancellations_summarized: 'Withdrawals summarized',
  audit_compacted: 'Old rows compacted',
  step_up_failed: 'OS authentication failed (nothing signed)',
  agent_paused: 'Agent paused (its requests refused unseen)',
  agent_resumed: 'Agent resumed',
  agent_labelled: 'Agent named',
  settings_loosened: 'Settings loosened (after OS authentication)',
  custody_frozen: 'All agents stopped (custody frozen)',
  custody_unfrozen: 'Custody unfrozen (after OS authentication)',
  grant_revoked: 'Grant revoked',
  short_grant_refused: 'Approve-for-a-while refused (nothing signed)',
}

const app = byId('app')

/** What a row records, in words. An approve-for-a-while grant is known by its
 *  `for_a_while` column (custody's engine alone sets it), never by its reason,
 *  which an agent may have written. */
export function kindWords(e: EventView): string {
  if (e.kind === 'grant_issued' && typeof e.for_a_while === 'number') return `Grant issued for a while (${e.for_a_while} minutes, approve for a while)`
  return KIND_WORDS[e.kind] ?? e.kind
}

function agentCell(e: EventView): HTMLElement | string {
  if (!e.agent) return ''
  return agentCellOf(e.agent, e.agent_short ?? e.agent, e.agent_label, e.agent_name, e.agent_phrase)
}

/** A list custody stored joined by commas (a grant's services), as words: "a, b". */
function listWords(s: string | null): string {
  return (s ?? '')
    .split(',')
    .map((x) => x.trim())
    .filter(Boolean)
    .join(', ')
}

/** `click+second+os-auth` in words. */
function CONFIRMED_WORDS(how: string): string {
  const words: Record<string, string> = { click: 'a click', hold: 'press and hold', terminal: 'the terminal', second: 'a second confirmation', 'os-auth': 'OS authentication' }
  return how
    .split('+')
    .map((p) => words[p] ?? p)
    .join(', then ')
}

function details(e: EventView): HTMLElement {
  const parts: (HTMLElement | null)[] = []
  if (e.cost) parts.push(h('div', { class: 'cost-small' }, e.cost))
  if (e.capability) parts.push(h('div', null, h('span', { class: 'muted' }, 'capability '), e.capability))
  if (e.risk || e.undo) parts.push(h('div', { class: 'muted' }, [e.risk ? `risk ${e.risk}` : '', e.undo ? (e.undo === 'irreversible' ? 'irreversible' : `undo ${e.undo}`) : ''].filter(Boolean).join(' · ')))
  if (e.hash) parts.push(h('div', null, h('span', { class: 'muted' }, 'hash '), h('code', { title: e.hash }, `${e.hash.slice(0, 12)}…`)))
  if (e.preview) parts.push(h('div', null, e.preview))
  if (e.caveat_words.length) parts.push(h('details', null, h('summary', null, 'caveats'), h('ul', null, ...e.caveat_words.map((w) => h('li', null, w))), e.caveats ? h('code', { class: 'json' }, e.caveats) : null))
  if (e.expires && (e.kind === 'grant_issued' || e.kind === 'consent_approved')) parts.push(h('div', { class: 'muted' }, `until ${when(e.expires)}`))
  // Custody's own revocation (freeze, the session's lock) says so, not a gesture.
  if (e.confirmed_by?.startsWith('custody, unasked')) parts.push(h('div', { class: 'muted', testid: 'confirmed-by' }, `by ${e.confirmed_by}`))
  else if (e.confirmed_by) parts.push(h('div', { class: 'muted', testid: 'confirmed-by' }, `confirmed by ${CONFIRMED_WORDS(e.confirmed_by)}`))
  if (e.reason) parts.push(h('div', { class: 'reason-text' }, e.reason))
  if (e.count !== null && e.count !== undefined) parts.push(h('div', { class: 'muted' }, `stands for ${e.count} requests${e.span ? ` from ${when(e.span[0])} to ${when(e.span[1])}` : ''}`))
  if (e.cut) parts.push(h('div', { class: 'muted' }, `oversized fields cut (original sizes): ${e.cut}`))
  if (e.principal && e.kind.startsWith('key_')) parts.push(h('code', null, e.principal))
  return h('div', { class: 'details' }, ...parts)
}

function peer(e: EventView): string {
  if (e.peer_uid === null && e.peer_pid === null) return ''
  return `uid ${e.peer_uid ?? '?'}, pid ${e.peer_pid ?? '?'}${e.peer_exe ? `, ${e.peer_exe}` : ''}`
}

function render(view: AuditView, filter: AuditFilter) {
  const v = view.verify
  setText(
    chain,
    v.ok
      ? `Chain verified: all ${v.rows} events are intact and in order.`
      : `The audit log does NOT verify: ${v.problem ?? 'unknown problem'}${v.first_bad_seq !== null ? ` (first bad event #${v.first_bad_seq})` : ''}. It was damaged or tampered with.`,
  )
  chain.className = v.ok ? 'msg msg-ok' : 'msg msg-error'
  chain.dataset.ok = String(v.ok)

  // A consent is one use of one proposal, handed to the agent when it was
  // approved: custody does not see the service redeem it, so it is never
  // called live — it is listed as given (for its one use), apart.
  const grants = view.live.filter((e) => e.kind === 'grant_issued')
  const given = view.live.filter((e) => e.kind === 'consent_approved')
  replace(
    live,
    grants.length
      ? h(
          'table',
          { class: 'table', testid: 'live-table' },
          h('thead', null, h('tr', null, h('th', null, 'What'), h('th', null, 'Agent'), h('th', null, 'Where'), h('th', null, 'Allows'), h('th', null, 'Until'), h('th', null, 'Revoke'))),
          h(
            'tbody',
            null,
            ...grants.map((e) =>
              h(
                'tr',
                { testid: 'live-row' },
                h('td', { testid: 'live-what' }, typeof e.for_a_while === 'number' ? 'Grant for a while' : 'Grant'),
                h('td', null, agentCell(e)),
                h('td', null, listWords(e.service)),
                h('td', null, e.preview ?? '', e.caveat_words.length ? h('ul', { class: 'words' }, ...e.caveat_words.map((w) => h('li', null, w))) : null),
                h('td', null, e.expires ? `${when(e.expires)} (in ${span(e.expires - view.now)})` : ''),
                revokeCell(e, view),
              ),
            ),
          ),
        )
      : h('p', { class: 'muted', testid: 'no-live' }, 'No live grants.'),
  )
  replace(
    usedList,
    given.length
      ? h(
          'table',
          { class: 'table', testid: 'used-table' },
          h('thead', null, h('tr', null, h('th', null, 'Agent'), h('th', null, 'Where'), h('th', null, 'For'), h('th', null, 'State'))),
          h(
            'tbody',
            null,
            ...given.map((e) =>
              h(
                'tr',
                { testid: 'used-row' },
                h('td', null, agentCell(e)),
                h('td', null, listWords(e.service)),
                h('td', null, `one ${e.capability ?? '?'}${e.cost ? ` for ${e.cost}` : ''} (proposal ${e.hash?.slice(0, 12) ?? '?'}…)`),
                h('td', { testid: 'one-shot' }, `given to the agent for its one use${e.expires ? `; void after ${when(e.expires)}` : ''}`),
              ),
            ),
          ),
        )
      : h('p', { class: 'muted', testid: 'no-used' }, 'No consent given lately.'),
  )
  usedSection.hidden = given.length === 0

  replace(
    events,
    view.events.length
      ? h(
          'table',
          { class: 'table', testid: 'events-table' },
          h('thead', null, h('tr', null, h('th', null, '#'), h('th', null, 'When'), h('th', null, 'What'), h('th', null, 'Agent'), h('th', null, 'Service'), h('th', null, 'Details'), h('th', null, 'Asked by'))),
          h(
            'tbody',
            null,
            ...view.events.map((e) =>
              h(
                'tr',
                { class: `kind-${e.kind}`, testid: 'event-row', attrs: { 'data-kind': e.kind } },
                h('td', null, String(e.seq)),
                h('td', { class: 'when', title: String(e.at) }, whenExact(e.at)),
                h('td', { class: 'kind' }, kindWords(e)),
                h('td', null, agentCell(e)),
                h('td', null, listWords(e.service)),
                h('td', null, details(e)),
                h('td', { class: 'muted peer' }, peer(e)),
              ),
            ),
          ),
        )
      : h('p', { class: 'muted', testid: 'no-events' }, 'No events match.'),
  )
  setText(count, `${view.events.length}${view.truncated ? '+' : ''} event${view.events.length === 1 ? '' : 's'} shown, newest first${filterWords(filter)}.${view.truncated ? ' Narrow the filter to see older ones.' : ''}`)
}

/** An agent by its one name (the human's label, else its four words), its key's short form after it as a detail. */
function agentCellOf(key: string, short: string, label: string | null, name?: string | null, phrase?: string | null): HTMLElement {
  return h('span', { class: 'agent-name' }, h('strong', { testid: 'agent-name' }, agentName({ name, label, phrase })), ' ', h('code', { class: 'muted', title: key }, short))
}

/** One pause or resume at a time; the view comes back from the backend. */
let pausing = false
/** Whether the human opened the list of agents to pause (kept across refreshes). */
let pickerOpen = false
async function pauseAction(f: () => Promise<PausesView>, done: string) {
  if (pausing) return
  pausing = true
  try {
    renderPauses(await f())
    say(pauseStatus, 'ok', done)
  } catch (e) {
    say(pauseStatus, 'error', errorText(e))
  } finally {
    pausing = false
  }
}

function renderPauses(v: PausesView) {
  const pausedKeys = new Set(v.paused.map((p) => p.agent))
  const others = v.agents.filter((a) => !pausedKeys.has(a.key))
  replace(
    paused,
    v.paused.length
      ? h(
          'table',
          { class: 'table', testid: 'paused-table' },
          h('thead', null, h('tr', null, h('th', null, 'Agent'), h('th', null, 'Until'), h('th', null, 'Why'), h('th', null, ''))),
          h(
            'tbody',
            null,
            ...v.paused.map((p) =>
              h(
                'tr',
                { testid: 'paused-row', attrs: { 'data-agent': p.agent } },
                h('td', null, agentCellOf(p.agent, p.short, p.label, p.name, p.phrase)),
                h('td', null, p.until === null ? 'until you resume it' : `${when(p.until)} (in ${span(p.until - v.now)})`),
                h('td', { class: 'reason-text' }, p.reason),
                h(
                  'td',
                  null,
                  h('button', { class: 'btn btn-small', testid: 'resume', attrs: { type: 'button' }, on: { click: () => void pauseAction(() => api.agentResume(p.agent), 'Resumed: its requests are shown to you again.') } }, 'Resume'),
                ),
              ),
            ),
          ),
        )
      : h('p', { class: 'muted', testid: 'no-paused' }, 'No agent is paused.'),
    others.length
      ? h(
          'details',
          { testid: 'pause-agents', attrs: pickerOpen ? { open: '' } : {}, on: { toggle: (e: Event) => (pickerOpen = (e.target as HTMLDetailsElement).open) } },
          h('summary', null, `Pause an agent (${others.length} known)`),
          h(
            'ul',
            { class: 'agents' },
            ...others.map((a) =>
              h(
                'li',
                { testid: 'pause-agent', attrs: { 'data-agent': a.key } },
                agentCellOf(a.key, a.short, a.label, a.name, a.phrase),
                a.waiting ? h('span', { class: 'badge badge-warn' }, ' asking now') : null,
                ' ',
                h('button', { class: 'btn btn-small', testid: 'pause-1h', attrs: { type: 'button' }, on: { click: () => void pauseAction(() => api.agentPause(a.key, 3600), 'Paused for 1 hour: its requests are refused without being shown.') } }, 'Pause for 1 hour'),
                ' ',
                h('button', { class: 'btn btn-small', testid: 'pause', attrs: { type: 'button' }, on: { click: () => void pauseAction(() => api.agentPause(a.key, null), 'Paused until you resume it: its requests are refused without being shown.') } }, 'Pause until resumed'),
              ),
            ),
          ),
        )
      : null,
  )
}

async function loadPauses() {
  try {
    renderPauses(await api.agentPauses())
  } catch (e) {
    say(pauseStatus, 'error', errorText(e))
  }
}

function filterWords(f: AuditFilter): string {
  const w: string[] = []
  if (f.kinds?.length) w.push(f.kinds.map((k) => KIND_WORDS[k as EventKind] ?? k).join(', '))
  if (f.agent) w.push(`agent ${f.agent.slice(0, 20)}…`)
  if (f.service) w.push(`service ${f.service}`)
  if (f.since) w.push(`from ${when(f.since)}`)
  if (f.until) w.push(`until ${when(f.until)}`)
  return w.length ? ` (${w.join('; ')})` : ''
}

// Page skeleton.
const chain = h('p', { class: 'msg', testid: 'chain' }, 'Verifying the chain…')
const live = h('div', { class: 'table-wrap', testid: 'live' })
// Revoking (issue 30): custody signs a revocation after OS authentication;
// only services that check revocations refuse the grant.
const revokeMsg = h('p', { class: 'msg', testid: 'revoke-status', attrs: { role: 'status' } })
revokeMsg.hidden = true
const revokeNote = h('p', { class: 'muted', testid: 'revoke-note' }, 'Revoke asks for your password, then custody signs a revocation and publishes it as a file. Services that do not check revocations still accept the grant until it expires.')
function revokeCell(e: EventView, view: AuditView): HTMLElement {
  if (!e.token_id) return h('td', null, '')
  if (view.revoked?.includes(e.token_id)) return h('td', { testid: 'revoked' }, 'Revoked (still accepted until it expires by services that do not check revocations)')
  const id = e.token_id
  const b = h('button', { class: 'btn btn-small', testid: 'revoke', attrs: { type: 'button' } }, 'Revoke…')
  b.addEventListener('click', async () => {
    b.disabled = true
    say(revokeMsg, 'info', 'Asking the OS for your password…')
    try {
      const r = await api.grantRevoke(id, null)
      say(revokeMsg, 'ok', `Revoked; the signed revocation is in ${r.files.join(', ')}. ${r.note}`)
      void load()
    } catch (err) {
      say(revokeMsg, 'error', errorText(err))
      b.disabled = false
    }
  })
  return h('td', null, b)
}
const usedList = h('div', { class: 'table-wrap', testid: 'used' })
const liveNote = h('p', { class: 'muted', testid: 'live-note' }, 'Each consent allows one COMMIT of one proposal and was handed to the agent when you approved it: it counts as used. Custody does not see the service redeem it.')
const usedSection = h('section', { testid: 'used-section' }, h('h2', null, 'Consents given (one use each)'), usedList, liveNote)
usedSection.hidden = true
const events = h('div', { class: 'table-wrap', testid: 'events' })
const paused = h('div', { class: 'table-wrap', testid: 'paused' })
const pauseStatus = h('p', { class: 'msg', testid: 'pause-status', attrs: { role: 'status' } })
pauseStatus.hidden = true
const count = h('p', { class: 'muted', testid: 'count' })
const kind = h('select', { id: 'f-kind', testid: 'f-kind', attrs: { 'aria-label': 'Kind' } }, h('option', { attrs: { value: '' } }, 'Every kind'), ...Object.entries(KIND_WORDS).map(([k, w]) => h('option', { attrs: { value: k } }, w)))
const agent = h('input', { id: 'f-agent', testid: 'f-agent', attrs: { type: 'text', placeholder: 'agent key (ed25519:…)', spellcheck: 'false' } })
const service = h('input', { id: 'f-service', testid: 'f-service', attrs: { type: 'text', placeholder: 'service id', spellcheck: 'false' } })
const since = h('input', { id: 'f-since', testid: 'f-since', attrs: { ...TIME_FIELD_ATTRS, 'aria-label': 'From (your local time)' } })
const until = h('input', { id: 'f-until', testid: 'f-until', attrs: { ...TIME_FIELD_ATTRS, 'aria-label': 'Until (your local time)' } })
const apply = h('button', { class: 'btn', testid: 'f-apply', attrs: { type: 'submit' } }, 'Filter')
const reset = h('button', { class: 'btn btn-default', testid: 'f-reset', attrs: { type: 'button' } }, 'Clear')
const exportJsonl = h('button', { class: 'btn', testid: 'export-jsonl', attrs: { type: 'button' } }, 'Export JSONL')
const exportCsv = h('button', { class: 'btn', testid: 'export-csv', attrs: { type: 'button' } }, 'Export CSV')
const status = h('p', { class: 'msg', testid: 'status', attrs: { role: 'status' } })
status.hidden = true

function filter(): AuditFilter {
  return {
    kinds: kind.value ? [kind.value] : [],
    agent: agent.value.trim() || null,
    service: service.value.trim() || null,
    since: fromTimeInput(since.value),
    until: fromTimeInput(until.value) !== null ? (fromTimeInput(until.value) as number) + 59 : null,
    limit: 500,
  }
}

let loading = false
let again = false
async function load() {
  if (loading) {
    again = true
    return
  }
  const bad = badTimes()
  if (bad) {
    say(status, 'error', bad)
    return
  }
  loading = true
  const f = filter()
  try {
    render(await api.auditQuery(f), f)
  } catch (e) {
    say(status, 'error', errorText(e))
  } finally {
    loading = false
    if (again) {
      again = false
      void load()
    }
  }
}

/** A time typed that is not one: said, rather than quietly filtering on nothing. */
function badTimes(): string | null {
  for (const [el, name] of [[since, 'from'], [until, 'until']] as const) {
    if (el.value.trim() !== '' && fromTimeInput(el.value) === null) return `“${name}” is not a date and time: type it like 2026-12-24 18:00, or leave it empty`
  }
  return null
}

async function exportAs(format: 'jsonl' | 'csv') {
  const bad = badTimes()
  if (bad) {
    say(status, 'error', bad)
    return
  }
  try {
    const r = await api.auditExport(format, filter())
    say(status, 'ok', `Exported ${r.rows} event${r.rows === 1 ? '' : 's'} to ${r.path}`)
  } catch (e) {
    say(status, 'error', errorText(e))
  }
}

replace(
  app,
  h('header', { class: 'home-head' }, h('h1', null, 'Audit log'), mainNav('audit', (m) => say(status, 'error', m))),
  chain,
  h('section', null, h('h2', null, 'Live grants'), live, revokeNote, revokeMsg),
  usedSection,
  h('section', null, h('h2', null, 'Paused agents (their requests are refused without being shown)'), pauseStatus, paused),
  h(
    'section',
    null,
    h('h2', null, 'Events'),
    h('form', { class: 'filters', on: { submit: (e: Event) => { e.preventDefault(); void load() } } }, kind, agent, service, h('label', null, 'from ', since), h('label', null, 'until ', until), apply, reset),
    h('div', { class: 'actions' }, exportJsonl, exportCsv),
    status,
    count,
    events,
  ),
)
reset.addEventListener('click', () => {
  kind.value = ''
  agent.value = ''
  service.value = ''
  since.value = ''
  until.value = ''
  void load()
})
kind.addEventListener('change', () => void load())
exportJsonl.addEventListener('click', () => void exportAs('jsonl'))
exportCsv.addEventListener('click', () => void exportAs('csv'))
void on('pending-changed', () => void load())
void on('status-changed', () => void load())
void on('pauses-changed', () => void loadPauses())
setInterval(() => {
  void load()
  void loadPauses()
}, 30_000)
void load()
void loadPauses()
