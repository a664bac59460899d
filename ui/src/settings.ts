// Settings, a view of the main window: principal keys (create, import an upstream principal.key, copy
// the public key services must trust, delete), the peer policy, limits, the
// socket path and the known agents (their words and names). Saved to settings.json in the custody data
// directory; the page says which changes wait for a restart of the socket.

import './style.css'
import { api, errorCode, errorText, type AgentUserPlanView, type KeyView, type KnownAgent, type Settings, type SettingsView } from './ipc'
import { h, replace, byId, say, setText, copyText } from './dom'
import { when, isCurrency, money, parseAmount } from './format'
import { mainNav } from './nav'

const app = byId('app')

/** Reads `30m`, `8h`, `7d`, `1h30m` into seconds, or null. */
export function parseDuration(text: string): number | null {
  const t = text.trim()
  if (!/^(\d{1,9}[smhdw])+$/.test(t)) return null
  const unit: Record<string, number> = { s: 1, m: 60, h: 3600, d: 86400, w: 604800 }
  let total = 0
  for (const m of t.matchAll(/(\d+)([smhdw])/g)) total += Number(m[1]) * unit[m[2]]
  return Number.isSafeInteger(total) && total > 0 ? total : null
}

/** Seconds as the largest exact unit up to days, the unit the grant form and
 *  the hints use: `604800` → `7d` (never `1w`), `86400` → `1d`, `5400` → `90m`. */
export function durationText(secs: number): string {
  for (const [u, n] of [['d', 86400], ['h', 3600], ['m', 60]] as const) {
    if (secs % n === 0) return `${secs / n}${u}`
  }
  return `${secs}s`
}

const FIELD_WORDS: Record<string, string> = {
  agents_group: 'agents group',
  extra_users: 'allowed users',
  socket_path: 'socket path',
  max_consent_horizon_secs: 'how far ahead an offer may run',
  max_grant_lifetime_secs: 'grant lifetime',
  queue_size: 'queue size',
  rate_per_minute: 'rate limit',
  step_up: 'OS authentication',
}


const keysList = h('div', { testid: 'keys' })
const keysStore = h('p', { class: 'muted', testid: 'store' })
const keyMsg = h('p', { class: 'msg', testid: 'keys-status' })
keyMsg.hidden = true

function keyRow(k: KeyView): HTMLElement {
  const copied = h('span', { class: 'muted' })
  const confirm = h('input', { attrs: { type: 'text', placeholder: 'type the full key to confirm', spellcheck: 'false', 'aria-label': 'Confirm by typing the key' } })
  const doDelete = h('button', { class: 'btn btn-danger', attrs: { type: 'button' } }, 'Delete this key for good')
  const del = h('details', { class: 'danger-zone' }, h('summary', null, 'Delete…'), h('p', null, 'Deleting a principal key cannot be undone: grants it signed stay valid until they expire, but nothing new can be signed with it.'), confirm, doDelete)
  doDelete.addEventListener('click', async () => {
    try {
      await api.keyDelete(k.public, confirm.value)
      say(keyMsg, 'ok', `Deleted ${k.short}.`)
      await loadKeys()
    } catch (e) {
      say(keyMsg, 'error', errorText(e))
    }
  })
  return h(
    'div',
    { class: 'key', testid: 'key' },
    h('p', null, h('strong', null, k.label), ` — ${k.source}, ${when(k.created_at)}`, k.status === 'missing' ? h('span', { class: 'badge badge-warn' }, 'secret missing from the keychain') : null),
    h('p', null, h('code', { class: 'pubkey', testid: 'pubkey' }, k.public)),
    h('p', null, h('button', { class: 'btn btn-small', attrs: { type: 'button' }, on: { click: async () => setText(copied, (await copyText(k.public)) ? ' Copied.' : ' Select it and copy it.') } }, 'Copy public key'), copied, h('span', { class: 'muted' }, ' Services must trust this key.')),
    del,
  )
}

async function loadKeys() {
  try {
    const v = await api.keysList()
    setText(keysStore, `Keys are in ${v.store}.`)
    replace(keysList, ...(v.keys.length ? v.keys.map(keyRow) : [h('p', { class: 'muted', testid: 'no-keys' }, 'No principal key yet.')]))
  } catch (e) {
    say(keyMsg, 'error', errorText(e))
  }
}

function keysSection(): HTMLElement {
  const label = h('input', { testid: 'new-key-label', attrs: { type: 'text', maxlength: '128', placeholder: 'label, e.g. personal', 'aria-label': 'Label of the new key' } })
  const create = h('button', { class: 'btn', testid: 'new-key', attrs: { type: 'button' } }, 'Create key')
  create.addEventListener('click', async () => {
    try {
      const k = await api.keyCreate(label.value.trim())
      say(keyMsg, 'ok', `Created ${k.public}.`)
      label.value = ''
      await loadKeys()
    } catch (e) {
      say(keyMsg, 'error', errorText(e))
    }
  })
  const path = h('input', { testid: 'import-path', attrs: { type: 'text', spellcheck: 'false', placeholder: '~/.parley/principal.key', 'aria-label': 'The key file to import' } })
  path.value = '~/.parley/principal.key'
  const ilabel = h('input', { testid: 'import-label', attrs: { type: 'text', maxlength: '128', placeholder: 'label', 'aria-label': 'Label of the imported key' } })
  ilabel.value = 'imported'
  const imp = h('button', { class: 'btn', testid: 'import', attrs: { type: 'button' } }, 'Import')
  const shredBox = h('div', { class: 'msg msg-warn', testid: 'shred-offer' })
  shredBox.hidden = true
  imp.addEventListener('click', async () => {
    const file = path.value.trim()
    try {
      const k = await api.keyImport(file, ilabel.value.trim())
      say(keyMsg, 'ok', `Imported ${k.public} into the keychain.`)
      const shred = h('button', { class: 'btn btn-danger', testid: 'shred', attrs: { type: 'button' } }, 'Shred the file')
      shred.addEventListener('click', async () => {
        try {
          await api.keyShred(file)
          replace(shredBox, `${file} was overwritten and deleted.`)
        } catch (e) {
          say(keyMsg, 'error', errorText(e))
        }
      })
      replace(shredBox, `${file} still holds the secret key in plain text; anyone who can read it can sign as you. `, shred)
      shredBox.hidden = false
      await loadKeys()
    } catch (e) {
      say(keyMsg, 'error', errorText(e))
    }
  })
  return h(
    'section',
    null,
    h('h2', null, 'Principal keys'),
    keysStore,
    keysList,
    h('h3', null, 'Create another key'),
    h('div', { class: 'inline' }, label, create),
    h('h3', null, 'Import an upstream principal.key'),
    h('p', { class: 'muted' }, 'A key made by the Parley tooling (parley init) can be imported into the keychain once.'),
    h('p', { class: 'help', testid: 'keys-asks' }, 'Deleting or importing a key, or creating one next to another, asks for your password (OS authentication) first.'),
    h('div', { class: 'inline' }, path, ilabel, imp),
    shredBox,
    keyMsg,
  )
}

function settingsSection(v: SettingsView): HTMLElement {
  const s = v.settings
  const group = h('input', { testid: 's-group', attrs: { type: 'text', placeholder: 'e.g. parley-agents' } })
  group.value = s.agents_group ?? ''
  const users = h('textarea', { testid: 's-users', attrs: { rows: '3', placeholder: 'one user name or uid per line' } })
  users.value = s.extra_users.join('\n')
  const socket = h('input', { testid: 's-socket', attrs: { type: 'text', spellcheck: 'false', placeholder: v.socket?.path ?? '' } })
  socket.value = s.socket_path ?? ''
  const horizon = h('input', { testid: 's-horizon', attrs: { type: 'text' } })
  horizon.value = durationText(s.max_consent_horizon_secs)
  const lifetime = h('input', { testid: 's-lifetime', attrs: { type: 'text' } })
  lifetime.value = durationText(s.max_grant_lifetime_secs)
  const queue = h('input', { testid: 's-queue', attrs: { type: 'number', min: '1', max: '1024' } })
  queue.value = String(s.queue_size)
  const rate = h('input', { testid: 's-rate', attrs: { type: 'number', min: '1', max: '600' } })
  rate.value = String(s.rate_per_minute)
  const stepUp = h(
    'select',
    { testid: 's-stepup' },
    h('option', { attrs: { value: 'committing' } }, `Every consent, and every grant that allows COMMIT or UNDO${v.step_up_root ? '' : ' (recommended)'}`),
    h('option', { attrs: { value: 'above' } }, 'Consents from an amount, and grants that allow COMMIT or UNDO'),
    h('option', { attrs: { value: 'never' } }, 'Never: a click alone signs'),
  ) as HTMLSelectElement
  stepUp.value = s.step_up.rule
  const threshold = h('input', { testid: 's-stepup-amount', attrs: { type: 'text', placeholder: 'e.g. 50.00 USD' } })
  threshold.value = s.step_up.rule === 'above' ? money(s.step_up.amount, s.step_up.currency) : ''
  // Approve for a while (issue 30): its grants end when the screen locks (on by default; off loosens, so saving it asks).
  const endOnLock = h('input', { testid: 's-end-short-on-lock', attrs: { type: 'checkbox' } }) as HTMLInputElement
  endOnLock.checked = s.end_short_grants_on_lock ?? true
  const hideDetails = h(
    'select',
    { testid: 's-hide-details' },
    h('option', { attrs: { value: 'when_locked' } }, 'When the screen is locked (recommended)'),
    h('option', { attrs: { value: 'always' } }, 'Always'),
  ) as HTMLSelectElement
  hideDetails.value = s.hide_notification_details ?? 'when_locked'
  const showThreshold = () => (threshold.hidden = stepUp.value !== 'above')
  stepUp.addEventListener('change', showThreshold)
  showThreshold()
  // Known agents: every key the human has dealt with, with its words and
  // the human's name for it (kept by custody; every review shows it).
  const labelList = h('ul', { class: 'labels', testid: 's-labels' })
  // Names are saved with everything else, by the one Save button: each
  // changed name is sent on its own (custody keeps them, agent_label_set).
  const names: Array<() => Promise<string | null>> = []
  const agentRow = (a: KnownAgent) => {
    const name = h('input', { testid: 's-agent-name', attrs: { type: 'text', maxlength: '64', spellcheck: 'false', placeholder: 'no name yet (type one)', 'aria-label': `Your name for ${a.phrase}` } }) as HTMLInputElement
    name.value = a.label ?? ''
    const rowMsg = h('span', { class: 'muted', testid: 's-agent-status' })
    let saved = a.label ?? ''
    names.push(async () => {
      const label = name.value.trim()
      if (label === saved) return null
      try {
        await api.agentLabelSet(a.key, label || null)
        saved = label
        name.value = label
        setText(rowMsg, label ? ' Name saved.' : ' Name removed.')
        return null
      } catch (e) {
        setText(rowMsg, ` ${errorText(e)}`)
        return errorText(e)
      }
    })
    return h(
      'li',
      { testid: 's-agent' },
      h('strong', { testid: 's-agent-phrase' }, a.phrase),
      ' ',
      h('code', { class: 'muted', title: a.key }, a.short),
      h('div', { class: 'inline' }, name, rowMsg),
    )
  }
  const drawLabels = async () => {
    try {
      const agents = (await api.agentPauses()).agents
      replace(labelList, ...(agents.length ? agents.map(agentRow) : [h('li', { class: 'muted' }, 'No agents yet: an agent appears here once it has asked for something.')]))
    } catch (e) {
      replace(labelList, h('li', { class: 'msg msg-error' }, errorText(e)))
    }
  }
  void drawLabels()
  const save = h('button', { class: 'btn btn-approve', testid: 's-save', attrs: { type: 'button' } }, 'Save settings')
  const msg = h('div', { class: 'msg', testid: 's-status' })
  msg.hidden = true
  const showRestart = (r: SettingsView) => {
    if (r.restart_needed.length) {
      replace(
        msg,
        `Saved. These changes take effect after a restart of the socket: ${r.restart_needed.map((f) => FIELD_WORDS[f] ?? f).join(', ')}. A restart drops pending requests. `,
        h('button', { class: 'btn', testid: 's-restart', attrs: { type: 'button' }, on: { click: () => void api.appRestart().catch((e) => say(msg, 'error', errorText(e))) } }, 'Restart now'),
      )
      msg.className = 'msg msg-warn'
      msg.hidden = false
    }
  }
  // The settings as the form says them, or why it cannot say them yet.
  const fromForm = (): Settings | string => {
    const h1 = parseDuration(horizon.value)
    const l1 = parseDuration(lifetime.value)
    if (h1 === null || l1 === null) return 'Write durations like 30m, 24h or 7d.'
    let step_up: Settings['step_up'] = { rule: 'committing' }
    if (stepUp.value === 'never') step_up = { rule: 'never' }
    if (stepUp.value === 'above') {
      const [, num = '', currency = ''] = /^\s*(\S+)\s*([A-Za-z]{3})\s*$/.exec(threshold.value) ?? []
      const a = isCurrency(currency.toUpperCase()) ? parseAmount(num, currency.toUpperCase()) : { error: 'name a currency, e.g. USD' }
      if (a.amount === undefined) return `The amount from which OS authentication is asked: write it like 50.00 USD (${a.error ?? 'not an amount'}).`
      step_up = { rule: 'above', amount: a.amount, currency: currency.toUpperCase() }
    }
    return {
      agents_group: group.value.trim() || null,
      extra_users: users.value.split(/[\s,]+/).filter(Boolean),
      socket_path: socket.value.trim() || null,
      max_consent_horizon_secs: h1,
      max_grant_lifetime_secs: l1,
      queue_size: Number(queue.value),
      rate_per_minute: Number(rate.value),
      // Custody keeps agent names (agent_label_set); nothing to save here.
      agent_labels: {},
      step_up,
      // The backend keeps its own value (only autostart_set changes it).
      autostart_offered: s.autostart_offered,
      end_short_grants_on_lock: endOnLock.checked,
      hide_notification_details: hideDetails.value === 'always' ? 'always' : 'when_locked',
    }
  }
  // Before Save: which changes loosen custody, so that saving asks for the
  // password first (custody decides; custody enforces it on Save too).
  const asks = h('div', { class: 'msg msg-warn', testid: 's-asks' })
  asks.hidden = true
  let asked = 0
  const showAsks = async () => {
    const next = fromForm()
    const mine = ++asked
    if (typeof next === 'string') return
    try {
      const l = await api.settingsLoosenings(next)
      if (mine !== asked) return
      replace(asks, 'Saving asks for your password (OS authentication) first, because these changes loosen custody:', h('ul', null, ...l.map((c) => h('li', null, c.words))))
      asks.hidden = l.length === 0
    } catch {
      asks.hidden = true
    }
  }
  for (const el of [group, users, horizon, lifetime, queue, rate, stepUp, threshold]) {
    el.addEventListener('input', () => void showAsks())
    el.addEventListener('change', () => void showAsks())
  }
  save.addEventListener('click', async () => {
    const next = fromForm()
    if (typeof next === 'string') {
      say(msg, 'error', next)
      return
    }
    const nameErrors = (await Promise.all(names.map((n) => n()))).filter(Boolean)
    if (nameErrors.length) {
      say(msg, 'error', `A name was not saved: ${nameErrors[0]}`)
      return
    }
    try {
      const r = await api.settingsSave(next)
      say(msg, 'ok', 'Saved.')
      showRestart(r)
      void showAsks()
    } catch (e) {
      say(msg, 'error', errorCode(e) === 'not_authenticated' ? `Not saved: ${errorText(e)}` : errorText(e))
    }
  })
  const policy = v.policy
  const atLogin = h('input', { testid: 's-autostart', attrs: { type: 'checkbox' } }) as HTMLInputElement
  atLogin.checked = v.autostart.enabled
  atLogin.disabled = v.autostart.error !== null
  const atLoginMsg = h('p', { class: 'help', testid: 's-autostart-status' }, v.autostart.error ?? (v.autostart.enabled ? `On: ${v.autostart.entry} starts it hidden in the tray.` : 'Off.'))
  atLogin.addEventListener('change', async () => {
    atLogin.disabled = true
    try {
      const a = await api.autostartSet(atLogin.checked)
      atLogin.checked = a.enabled
      setText(atLoginMsg, a.enabled ? `On: ${a.entry} starts it hidden in the tray.` : 'Off.')
    } catch (e) {
      atLogin.checked = !atLogin.checked
      setText(atLoginMsg, errorText(e))
    } finally {
      atLogin.disabled = false
    }
  })
  // Another OS user's agents: plan (shown whole), then the privileged helper
  // through polkit, then the socket switches at the next restart.
  const agentUser = h('input', { testid: 's-agent-user', attrs: { type: 'text', spellcheck: 'false', 'aria-label': 'The OS user your agents run as' } }) as HTMLInputElement
  const planBtn = h('button', { class: 'btn', testid: 's-agent-plan', attrs: { type: 'button' } }, 'Show what changes')
  const planBox = h('div', { class: 'msg msg-info', testid: 's-agent-steps' })
  planBox.hidden = true
  const applyBtn = h('button', { class: 'btn btn-approve', testid: 's-agent-apply', attrs: { type: 'button' } }, 'Do it (asks for an administrator’s password)')
  const agentMsg = h('p', { class: 'msg', testid: 's-agent-status' })
  agentMsg.hidden = true
  let planned: AgentUserPlanView | null = null
  agentUser.addEventListener('input', () => {
    planned = null
    planBox.hidden = true
  })
  planBtn.addEventListener('click', async () => {
    agentMsg.hidden = true
    try {
      planned = await api.agentUserPlan(agentUser.value)
      replace(planBox, h('p', null, `To let ${planned.user}’s agents connect:`), h('ol', null, ...planned.steps.map((s) => h('li', null, s.replace(/^\d+\. /, '')))), h('p', null, `Custody then listens on ${planned.socket} (after a restart).`), applyBtn)
      planBox.hidden = false
    } catch (e) {
      planned = null
      planBox.hidden = true
      say(agentMsg, 'error', errorText(e))
    }
  })
  applyBtn.addEventListener('click', async () => {
    if (!planned) return
    applyBtn.disabled = true
    say(agentMsg, 'info', 'Waiting for the administrator’s password…')
    try {
      const r = await api.agentUserApply(planned.user, planned.steps)
      group.value = r.settings.agents_group ?? ''
      socket.value = r.settings.socket_path ?? ''
      planBox.hidden = true
      say(agentMsg, 'ok', `Done. ${planned.user}’s agents may connect at ${r.settings.socket_path} once custody restarts there.`)
      showRestart(r)
    } catch (e) {
      say(agentMsg, 'error', errorText(e))
    } finally {
      applyBtn.disabled = false
    }
  })
  // The OS prompt cannot name the decision: one sentence, and the
  // administrator's step through polkit (as for another user's agents).
  const ownerMsg = h('p', { class: 'msg', testid: 's-prompt-owner-status' })
  ownerMsg.hidden = true
  const ownerBtn = h('button', { class: 'btn', testid: 's-prompt-owner', attrs: { type: 'button' } }, 'Let the prompt name what I sign (asks for an administrator’s password)')
  ownerBtn.addEventListener('click', async () => {
    ownerBtn.disabled = true
    say(ownerMsg, 'info', 'Waiting for the administrator’s password…')
    try {
      const r = await api.promptOwnerApply()
      if (r.prompt_unnamed) say(ownerMsg, 'error', r.prompt_unnamed)
      else {
        ownerBtn.hidden = true
        unnamedBox.hidden = true
        say(ownerMsg, 'ok', 'Done. Your OS password prompt now says what it signs.')
      }
    } catch (e) {
      say(ownerMsg, 'error', errorText(e))
    } finally {
      ownerBtn.disabled = false
    }
  })
  const unnamedBox = h('p', { class: 'msg msg-warn', testid: 's-prompt-unnamed' }, v.prompt_unnamed ?? '')
  unnamedBox.hidden = !v.prompt_unnamed
  ownerBtn.hidden = !v.prompt_unnamed
  const fieldRow = (label: string, control: HTMLElement, help: string) =>
    h('div', { class: 'field' }, h('label', null, h('span', { class: 'field-label' }, label), control), h('p', { class: 'help' }, help))
  const section = h(
    'section',
    null,
    h('h2', null, 'Start at login'),
    h('div', { class: 'field' }, h('label', { class: 'check', testid: 's-autostart-label' }, atLogin, h('span', null, ' Start Parley Custody hidden in the tray when I log in (applies at once)')), atLoginMsg),
    h('h2', null, 'Who may connect'),
    policy
      ? h('p', { class: 'muted', testid: 'policy' }, `In force: custody's own user (uid ${policy.own_uid})${policy.agents_group ? `, members of ${policy.agents_group}` : ''}${policy.extra_uids.length ? `, uids ${policy.extra_uids.join(', ')}` : ''}. Anyone else is turned away before custody reads anything they send.`)
      : null,
    fieldRow('Agents group', group, 'Agents should run as their own OS user in this group: they can reach the socket and nothing else of yours.'),
    fieldRow('Other allowed users', users, 'User names or uids.'),
    fieldRow('Let another OS user’s agents connect', h('div', { class: 'inline' }, agentUser, planBtn), 'Name the OS user your agents run as. Custody shows what changes (the agents group, two memberships, a socket directory), then asks for an administrator’s password to do exactly that.'),
    planBox,
    agentMsg,
    fieldRow('Where agents connect (socket path)', socket, 'Leave it empty to use the usual place. With an agents group, choose a folder its members can open.'),
    h('details', { class: 'advanced', testid: 's-advanced' }, h('summary', null, 'Details for developers'),
      h('p', { class: 'help' }, 'The daemon’s --socket flag and the PARLEY_CUSTODY_SOCKET environment variable override the socket path set here. Connections are checked with the kernel’s peer credentials (SO_PEERCRED) before any byte is read.')),
    h('h2', null, 'Limits'),
    fieldRow('How far ahead an offer may run', horizon, 'An agent may ask you to approve an offer that stays valid at most this long (e.g. 24h).'),
    fieldRow('Longest grant', lifetime, 'Grants expire at most this long after they are issued (e.g. 7d).'),
    fieldRow('Queue size', queue, 'Requests waiting for you at once, all agents together.'),
    fieldRow('Rate limit', rate, 'New requests per minute from one OS user.'),
    h('h2', null, 'OS authentication before signing'),
    fieldRow('Ask for your password', h('div', null, stepUp, threshold,
      v.step_up_root ? h('p', { class: 'msg msg-warn', testid: 's-stepup-root' }, v.step_up_root) : null,
      unnamedBox, ownerBtn, ownerMsg), 'After you approve, your system asks for your password (or fingerprint) before custody signs, so a click another program synthesized, or someone else at your unlocked desk, signs nothing. With "Never", every review says that only the click protects it.'),
    h('h2', null, 'Approve for a while'),
    h(
      'div',
      { class: 'field' },
      h('label', { class: 'check' }, endOnLock, h('span', null, ' End approve-for-a-while grants when the screen locks')),
      h('p', { class: 'help' }, 'A review may let an agent spend up to an amount more, at one service, for up to an hour, without asking. Stop all agents and revoking always end such a grant; with this on, locking the screen ends it too (turning it off asks for your password).'),
    ),
    h('h2', null, 'Notifications and the lock screen'),
    fieldRow('Hide details in notifications', hideDetails, 'A notification with its details hidden says only that an agent asks: not what, how much or where. While the screen is locked, or the computer goes to sleep, nothing can be approved and no password prompt opens, whatever you choose here.'),
    h('h2', null, 'Known agents'),
    h('p', { class: 'help' }, 'Each agent key has four words derived from it, shown wherever the key is. Give the ones you trust a name: a request from an unnamed key you never approved says so above Approve.'),
    labelList,
    asks,
    h('div', { class: 'actions' }, save, h('span', { class: 'help' }, ' Saves everything above, agent names too (start at login applies at once).')),
    msg,
    h('p', { class: 'muted' }, `Stored in ${v.data_dir ?? '(unknown)'}/settings.json.`),
  )
  showRestart(v)
  if (v.restart_needed.length) setText(msg.firstChild ?? msg, `These saved changes take effect after a restart of the socket: ${v.restart_needed.map((f) => FIELD_WORDS[f] ?? f).join(', ')}. A restart drops pending requests. `)
  return section
}

async function main() {
  const navMsg = h('p', { class: 'msg', attrs: { role: 'status' } })
  navMsg.hidden = true
  replace(app, h('header', { class: 'home-head' }, h('h1', null, 'Settings'), mainNav('settings', (m) => say(navMsg, 'error', m))), navMsg, keysSection())
  void loadKeys()
  try {
    app.append(settingsSection(await api.settingsGet()))
  } catch (e) {
    app.append(h('p', { class: 'msg msg-error' }, errorText(e)))
  }
}

void main()
