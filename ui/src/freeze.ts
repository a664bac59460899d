// "Stop all agents" on the home view (issue 30): one button freezes custody
// (asks nothing: every pending request is denied, every new one refused
// unseen); while frozen, a banner says so and Unfreeze asks the OS for the
// password, then lists what was refused meanwhile. Custody enforces all of
// it (custody/src/engine/freeze.rs); this only shows it.

import { api, errorText, type FreezeView } from './ipc'
import { h, replace, say } from './dom'
import { when } from './format'

export const freezeSection = h('section', { class: 'freeze', testid: 'freeze' })
/** What the last unfreeze ended: stays shown until the next freeze. */
let lastUnfrozen: FreezeView | null = null
const msg = h('p', { class: 'msg', testid: 'freeze-status', attrs: { role: 'status' } })
msg.hidden = true

function refusedList(v: FreezeView): HTMLElement | null {
  if (!v.refused_rows.length) return null
  return h(
    'ul',
    { class: 'refused', testid: 'freeze-refused' },
    ...v.refused_rows.map((r) =>
      h('li', null, `${when(r.at)} · user ${r.peer_uid ?? '?'} · agent ${r.agent ?? '?'} · ${r.service ?? 'no service'}`),
    ),
  )
}

export function renderFreeze(v: FreezeView | null, after: () => void): void {
  if (!v) {
    freezeSection.hidden = true
    return
  }
  freezeSection.hidden = false
  if (v.frozen) {
    const unfreeze = h('button', { class: 'btn', testid: 'unfreeze', attrs: { type: 'button' } }, 'Unfreeze… (asks for your password)')
    unfreeze.addEventListener('click', async () => {
      unfreeze.disabled = true
      say(msg, 'info', 'Asking the OS for your password…')
      try {
        lastUnfrozen = await api.custodyUnfreeze()
        say(msg, 'info', '')
        renderFreeze({ ...lastUnfrozen, frozen: false }, after)
      } catch (e) {
        say(msg, 'error', errorText(e))
        unfreeze.disabled = false
      }
    })
    replace(
      freezeSection,
      h('p', { class: 'msg msg-error', testid: 'frozen' }, `Frozen since ${v.since ? when(v.since) : '?'}: all agents are stopped. Every request is refused without being shown (${v.refused} so far); nothing is signed.`),
      h('div', { class: 'actions' }, unfreeze),
      msg,
    )
    return
  }
  const done = lastUnfrozen
  const stop = h('button', { class: 'btn btn-danger', testid: 'stop-all', attrs: { type: 'button' } }, 'Stop all agents')
  stop.addEventListener('click', async () => {
    stop.disabled = true
    try {
      const v2 = await api.custodyFreeze()
      lastUnfrozen = null
      renderFreeze(v2, after)
      say(msg, 'ok', `Stopped: ${v2.denied} waiting request${v2.denied === 1 ? '' : 's'} denied.`)
      after()
    } catch (e) {
      say(msg, 'error', errorText(e))
      stop.disabled = false
    }
  })
  replace(
    freezeSection,
    done
      ? h('p', { class: 'msg msg-ok', testid: 'unfrozen' }, `Custody is unfrozen: agents may ask again. ${done.refused} request${done.refused === 1 ? ' was' : 's were'} refused while it was frozen${done.refused_rows.length ? ':' : '.'}`)
      : null,
    done ? refusedList(done) : null,
    h('div', { class: 'inline' }, stop, h('span', { class: 'muted' }, ' Denies everything waiting and refuses every new request until you unfreeze (which asks for your password). Grants already issued stay valid until they expire or you revoke them.')),
    msg,
  )
}
