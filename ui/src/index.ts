// Home, the main window's first view: custody's state, the first-run flow
// (create a principal key), the requests waiting for a decision, and the way
// to the other views.

import './style.css'
import { api, on, errorText, agentName, type PendingView, type StatusView } from './ipc'
import { h, replace, byId, say, copyText, setText } from './dom'
import { when, span } from './format'
import { mainNav } from './nav'
import { freezeSection, renderFreeze } from './freeze'

const app = byId('app')

export function describe(p: PendingView): string {
  const r = p.review
  const who = `“${agentName(r.agent)}”`
  if (r.kind === 'consent') {
    if (r.cost_money) return `${who} asks you to approve ${r.cost} at ${r.service}`
    // "free", or "not stated (an effect charges)": never "no cost" for a charge.
    return `${who} asks you to approve ${r.capability} at ${r.service} (${r.cost === 'free' ? 'no cost' : r.cost})`
  }
  return `${who} asks for a grant at ${r.service || 'every service'}`
}

const banners = h('div', { class: 'banners', testid: 'banners' })
const welcome = h('section', { class: 'welcome', testid: 'welcome' })
welcome.hidden = true
const identity = h('section', { class: 'identity', testid: 'identity' })
identity.hidden = true
const autostartOffer = h('section', { class: 'msg msg-info', testid: 'autostart-offer' })
autostartOffer.hidden = true
const pendingHead = h('h2', { testid: 'pending-head' }, 'Waiting for you')
const pendingList = h('ul', { class: 'pending', testid: 'pending' })
// On first run (no key yet, nothing asked) the welcome is the whole page:
// an empty "Waiting for you" would only raise the question what is missing.
const pendingSection = h('section', { testid: 'pending-section' }, pendingHead, pendingList)
const status = h('p', { class: 'msg', testid: 'status', attrs: { role: 'status' } })
status.hidden = true
let pending: PendingView[] = []

function renderStatus(s: StatusView) {
  const items: HTMLElement[] = []
  if (!s.running) items.push(h('p', { class: 'msg msg-error', testid: 'not-running' }, s.error ?? 'Custody is not running.'))
  // Locked or going to sleep: nothing is approved or issued meanwhile (the engine refuses); requests wait.
  if (s.session === 'locked') items.push(h('p', { class: 'msg msg-warn', testid: 'session-held' }, 'The screen is locked: approving and issuing are off until you unlock it. Requests wait; nothing is signed meanwhile.'))
  else if (s.session === 'asleep') items.push(h('p', { class: 'msg msg-warn', testid: 'session-held' }, 'The computer is going to sleep: approving and issuing are off until it wakes up. Requests wait; nothing is signed meanwhile.'))
  for (const w of s.warnings) items.push(h('p', { class: 'msg msg-warn' }, w))
  if (s.socket) {
    items.push(
      s.socket.listening
        ? h('p', { class: 'msg msg-info', testid: 'socket' }, `Agents connect at ${s.socket.path}`)
        : h('p', { class: 'msg msg-error', testid: 'socket' }, `Agents cannot connect: ${s.socket.error ?? 'the socket is not listening'}`),
    )
    if (s.socket.unreachable_for_agents) {
      items.push(h('p', { class: 'msg msg-warn' }, `Agents of the agents group cannot reach the socket: ${s.socket.unreachable_for_agents} is not searchable for them. Choose a socket path they can reach in Settings.`))
    }
  }
  if (s.notifications.available === false && s.notifications.message) {
    items.push(h('p', { class: 'msg msg-warn', testid: 'no-notifications' }, s.notifications.message))
  }
  if (s.tray?.available === false && s.tray.message) {
    // No tray icon, so no tray menu: Quit is offered here instead.
    const quit = h('button', { class: 'btn btn-small', testid: 'quit', attrs: { type: 'button' } }, 'Quit Parley Custody')
    quit.addEventListener('click', () => {
      quit.disabled = true
      api.appQuit().catch((e) => {
        quit.disabled = false
        say(status, 'error', errorText(e))
      })
    })
    items.push(h('p', { class: 'msg msg-warn', testid: 'no-tray' }, s.tray.message, ' ', quit))
  }
  if (s.restart_needed.length) {
    items.push(
      h(
        'div',
        { class: 'msg msg-warn', testid: 'restart-needed' },
        `Saved settings take effect after a restart of the socket (${s.restart_needed.join(', ')}). Pending requests are dropped by a restart. `,
        h('button', { class: 'btn', attrs: { type: 'button' }, on: { click: () => void api.appRestart().catch((e) => say(status, 'error', errorText(e))) } }, 'Restart now'),
      ),
    )
  }
  if (s.keys_error) items.push(h('p', { class: 'msg msg-error', testid: 'keys-error' }, `The keychain is not usable: ${s.keys_error}`))
  replace(banners, ...items)

  const present = s.keys.filter((k) => k.status === 'present')
  welcome.hidden = !(s.running && !s.keys_error && present.length === 0)
  if (!welcome.hidden && !welcome.dataset.built) buildWelcome(s)
  if (present.length) {
    const k = present[0]
    const copied = h('span', { class: 'muted' })
    replace(
      identity,
      h('h2', null, 'Signing as'),
      h('p', null, h('strong', null, k.label), ' — ', h('code', { class: 'pubkey', testid: 'principal-key' }, k.public)),
      h('p', { class: 'muted' }, 'Services must trust this public key. ', h('button', { class: 'btn btn-small', attrs: { type: 'button' }, on: { click: async () => setText(copied, (await copyText(k.public)) ? ' Copied.' : ' Select it and copy it.') } }, 'Copy'), copied),
      present.length > 1 ? h('p', { class: 'muted' }, `and ${present.length - 1} more key${present.length > 2 ? 's' : ''} (see Settings)`) : null,
    )
    identity.hidden = false
  } else {
    identity.hidden = true
  }
  // Asked once, after the key exists: an agent that asks while the app is
  // closed reaches nobody. Either answer is remembered; Settings changes it.
  autostartOffer.hidden = !(present.length && !s.autostart.offered && !s.autostart.error && !s.autostart.enabled)
  if (!autostartOffer.hidden && !autostartOffer.dataset.built) buildAutostartOffer()
}

function buildAutostartOffer() {
  autostartOffer.dataset.built = '1'
  const answer = (on: boolean) => async () => {
    for (const b of autostartOffer.querySelectorAll('button')) b.disabled = true
    try {
      await api.autostartSet(on)
      await refresh()
    } catch (e) {
      say(status, 'error', errorText(e))
      for (const b of autostartOffer.querySelectorAll('button')) b.disabled = false
    }
  }
  replace(
    autostartOffer,
    h('p', null, h('strong', null, 'Start Parley Custody when you log in?'), ' It then waits hidden in the tray, so a request an agent sends after you log in reaches you. You can change this in Settings.'),
    h(
      'div',
      { class: 'actions' },
      h('button', { class: 'btn', testid: 'autostart-yes', attrs: { type: 'button' }, on: { click: answer(true) } }, 'Start at login'),
      h('button', { class: 'btn', testid: 'autostart-no', attrs: { type: 'button' }, on: { click: answer(false) } }, 'Not now'),
    ),
  )
}

function buildWelcome(s: StatusView) {
  welcome.dataset.built = '1'
  const label = h('input', { id: 'key-label', testid: 'key-label', attrs: { type: 'text', maxlength: '128', value: 'principal', 'aria-label': 'Key label' } })
  label.value = 'principal'
  const create = h('button', { class: 'btn btn-approve', testid: 'create-key', attrs: { type: 'button' } }, 'Create my principal key')
  const msg = h('p', { class: 'msg', testid: 'welcome-status' })
  msg.hidden = true
  create.addEventListener('click', async () => {
    create.disabled = true
    say(msg, 'info', 'Creating the key in the keychain…')
    try {
      const k = await api.keyCreate(label.value.trim() || 'principal')
      say(msg, 'ok', `Created. Your principal key is ${k.public}. Give it to the services you use: they trust what it signs.`)
      await refresh()
    } catch (e) {
      say(msg, 'error', errorText(e))
      create.disabled = false
    }
  })
  replace(
    welcome,
    h('h2', null, 'Welcome. First, your principal key'),
    h('p', null, 'Parley Custody signs grants and consents for you with a principal key. It is created in ', s.store ?? 'the OS keychain', ' and never leaves it; services trust its public half. Agents never see it.'),
    h('div', { class: 'inline' }, h('label', null, 'Label ', label), create),
    h('p', { class: 'muted' }, 'Already have one from the Parley tooling (parley init)? ', h('button', { class: 'btn btn-small', attrs: { type: 'button' }, on: { click: () => void api.openWindow('settings') } }, 'Import principal.key in Settings')),
    msg,
  )
}

// The list is rebuilt only when its requests change; the countdowns tick in
// place (a button must not be replaced under the pointer between press and release).
let shownIds = ''
const countdowns = new Map<string, HTMLElement>()
function closesText(p: PendingView): string {
  return `closes in ${span(p.closes_at - Date.now() / 1000)} (at ${when(p.closes_at)}) · from user ${p.review.requester.user}`
}
function renderPending() {
  setText(pendingHead, pending.length ? `Waiting for you (${pending.length})` : 'Waiting for you')
  // Nothing waits: no empty card (the tray and the title say the count).
  pendingSection.hidden = pending.length === 0
  const ids = pending.map((p) => `${p.id}:${p.review.agent.label ?? ''}`).join(',')
  if (ids === shownIds) {
    for (const p of pending) {
      const el = countdowns.get(p.id)
      if (el) setText(el, closesText(p))
    }
    return
  }
  shownIds = ids
  countdowns.clear()
  replace(
    pendingList,
    ...(pending.length
      ? pending.map((p) => {
          const closes = h('div', { class: 'muted' }, closesText(p))
          countdowns.set(p.id, closes)
          return h(
            'li',
            { class: `pending-item kind-${p.review.kind}`, testid: 'pending-item' },
            h('div', { class: 'what' }, describe(p)),
            closes,
            h('button', { class: 'btn', testid: `review-${p.id}`, attrs: { type: 'button' }, on: { click: () => void api.openWindow('review', p.id).catch((e) => say(status, 'error', errorText(e))) } }, 'Review…'),
          )
        })
      : [h('li', { class: 'muted', testid: 'none-pending' }, 'Nothing is waiting. Agents ask over the socket; you get a notification and the request appears here.')]),
  )
}

async function refresh() {
  try {
    const [s, p, f] = await Promise.all([api.status(), api.pendingList().catch(() => [] as PendingView[]), api.custodyFrozen().catch(() => null)])
    pending = p
    renderStatus(s)
    renderPending()
    renderFreeze(f, () => void refresh())
  } catch (e) {
    say(status, 'error', errorText(e))
  }
}

replace(
  app,
  h('header', { class: 'home-head' }, h('h1', null, 'Parley Custody'), mainNav('home', (m) => say(status, 'error', m))),
  banners,
  // First run: the welcome (create a key) comes first, above Stop all agents.
  welcome,
  freezeSection,
  identity,
  autostartOffer,
  pendingSection,
  status,
)
void on('pending-changed', () => void refresh())
void on('status-changed', () => void refresh())
setInterval(renderPending, 1000)
setInterval(() => void refresh(), 15_000)
void refresh()
