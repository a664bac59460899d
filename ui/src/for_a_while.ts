// "Approve for a while" in a consent review (issue 30, item 4): a clearly
// secondary choice below the amount, off by default. Custody computes the
// offer (review_for_a_while: bounded amounts, minutes 5/15/30/60, the
// agent's name, the service) or offers nothing (a grant request, a job
// code, no amount of money, custody frozen): then nothing is shown. The
// human picks from those choices only; the words of the grant are shown
// before Approve (here and in the footer), and custody checks the choice
// again when Approve is pressed (review_decide's `for_a_while`).

import { api, type ForAWhile, type ForAWhileOffer, type PendingView } from './ipc'
import { h, replace, setText } from './dom'

/** The section, the footer line, and what the human chose (null: this order only). */
export interface ForAWhilePart {
  section: HTMLElement
  footLine: HTMLElement
  chosen: () => ForAWhile | null
  /** Disables the controls (decided, busy). */
  disable: (off: boolean) => void
  /**
   * Asks custody for the offer again (the agent renamed while the review is
   * open): its words name the agent as the rest of the review does, and the
   * human's choice stays as it was where it is still offered.
   */
  refresh: () => Promise<void>
}

/** What money `amount` (minor units) reads as, in the offer's words. */
function words(o: ForAWhileOffer, amount: number): string {
  const i = o.amounts.indexOf(amount)
  return i >= 0 ? o.amount_words[i] : ''
}

/** "and let “<agent>” spend up to 20.00 USD more at shop.example in the next 15 minutes without asking" */
export function sentence(o: ForAWhileOffer, w: ForAWhile): string {
  return `and let “${o.agent_name}” spend up to ${words(o, w.amount)} more at ${o.service} in the next ${w.minutes} minutes without asking`
}

/** The part for review `p`; filled once custody answers (hidden until then, and when nothing is offered). */
export function forAWhilePart(p: PendingView): ForAWhilePart {
  const section = h('section', { class: 'for-a-while', testid: 'for-a-while' })
  section.hidden = true
  const footLine = h('p', { class: 'for-a-while-foot', testid: 'for-a-while-foot' })
  footLine.hidden = true
  const on = h('input', { testid: 'for-a-while-on', attrs: { type: 'checkbox', id: 'for-a-while-on' } }) as HTMLInputElement
  const amount = h('select', { testid: 'for-a-while-amount', attrs: { 'aria-label': 'How much more' } }) as HTMLSelectElement
  const minutes = h('select', { testid: 'for-a-while-minutes', attrs: { 'aria-label': 'For how long' } }) as HTMLSelectElement
  const said = h('p', { class: 'for-a-while-words', testid: 'for-a-while-words' })
  let offer: ForAWhileOffer | null = null
  let off = false

  const chosen = (): ForAWhile | null => {
    if (!offer || !on.checked || section.hidden) return null
    const a = Number(amount.value)
    const m = Number(minutes.value)
    return offer.amounts.includes(a) && offer.minutes.includes(m) ? { amount: a, minutes: m } : null
  }
  const draw = () => {
    amount.disabled = off || !on.checked
    minutes.disabled = off || !on.checked
    on.disabled = off
    const w = chosen()
    said.hidden = !w
    footLine.hidden = !w
    if (offer && w) {
      const s = sentence(offer, w)
      const password = offer.asks_password && !p.step_up.required ? ' Your system asks for your password before signing both.' : ''
      setText(said, `Approve ${s}.${password} It ends when you stop all agents, when you revoke it in the audit log, or (as set) when the screen locks; a service that does not check revocations accepts it until it ends.`)
      setText(footLine, `${s.replace(/^and let /, 'Approving also lets ')}.`)
    }
  }
  on.addEventListener('change', draw)
  amount.addEventListener('change', draw)
  minutes.addEventListener('change', draw)

  const labelWords = h('span', { testid: 'for-a-while-label' })
  /** Shows custody's offer `o`; the choice made so far stays where `o` still offers it. */
  const show = (o: ForAWhileOffer | null) => {
    if (!o || !o.amounts.length) {
      offer = null
      section.hidden = true
      draw()
      return
    }
    const was = offer ? { amount: Number(amount.value), minutes: Number(minutes.value) } : null
    offer = o
    replace(amount, ...o.amounts.map((a, i) => h('option', { attrs: { value: String(a) } }, o.amount_words[i])))
    // Kept; else the smallest amount at least this order, else the smallest.
    const first = was && o.amounts.includes(was.amount) ? was.amount : (o.amounts.find((a) => a >= o.order.amount) ?? o.amounts[0])
    amount.value = String(first)
    replace(minutes, ...o.minutes.map((m) => h('option', { attrs: { value: String(m) } }, `${m} minutes`)))
    minutes.value = String(was && o.minutes.includes(was.minutes) ? was.minutes : o.minutes.includes(15) ? 15 : o.minutes[0])
    setText(labelWords, ` Also let “${o.agent_name}” spend more at ${o.service} without asking, for a while`)
    if (!section.childElementCount) {
      replace(
        section,
        h('label', { class: 'for-a-while-label', attrs: { for: 'for-a-while-on' } }, on, labelWords),
        h('div', { class: 'inline for-a-while-choices' }, h('span', { class: 'muted' }, 'up to '), amount, h('span', { class: 'muted' }, ' more, for '), minutes),
        said,
      )
    }
    section.hidden = false
    draw()
  }
  // One question at a time, and only the newest answer shown.
  let asked = 0
  const load = async () => {
    const mine = ++asked
    let o: ForAWhileOffer | null
    try {
      o = await api.reviewForAWhile(p.id)
    } catch {
      // Unreadable now: what is shown stays (custody checks the choice on Approve).
      if (mine === asked && !offer) section.hidden = true
      return
    }
    if (mine === asked) show(o)
  }
  void load()

  return {
    section,
    footLine,
    chosen,
    disable: (b: boolean) => {
      if (off !== b) {
        off = b
        draw()
      }
    },
    refresh: load,
  }
}
