// Money, times and durations for people.

import { ZERO_DECIMAL } from './custody-constants'

/** Currencies without minor units: generated from parley-core's money.rs (custody-constants.ts). */
export { ZERO_DECIMAL }

/** Integers are exact only up to 2^53 − 1 (canonical JSON's limit too). */
export const MAX_SAFE = Number.MAX_SAFE_INTEGER

/** §9.2 money: minor units shown with two decimals (`40.00 USD`), whole units for zero-decimal currencies. */
export function money(amount: number, currency: string): string {
  const sign = amount < 0 ? '-' : ''
  const abs = Math.abs(amount)
  if (ZERO_DECIMAL.includes(currency)) return `${sign}${abs} ${currency}`
  const whole = Math.floor(abs / 100)
  const cents = String(abs % 100).padStart(2, '0')
  return `${sign}${whole}.${cents} ${currency}`
}

/** Reads an amount typed by a person (`40`, `40.5`, `40.50`) into minor units, or says why not. */
export function parseAmount(text: string, currency: string): { amount?: number; error?: string } {
  const t = text.trim()
  if (t === '') return { error: 'enter an amount' }
  const zero = ZERO_DECIMAL.includes(currency)
  const m = /^(\d{1,13})(?:\.(\d{1,2}))?$/.exec(t)
  if (!m) {
    return {
      error: zero
        ? `whole ${currency} only, like 500`
        : 'a number with at most two decimals, like 40 or 40.50',
    }
  }
  if (zero && m[2] !== undefined) return { error: `${currency} has no minor units` }
  const whole = Number(m[1])
  const minor = m[2] === undefined ? 0 : Number(m[2].padEnd(2, '0'))
  const amount = zero ? whole : whole * 100 + minor
  if (!Number.isSafeInteger(amount)) return { error: 'too large' }
  if (amount <= 0) return { error: 'must be more than zero' }
  return { amount }
}

/** A currency code: three capital letters. */
export function isCurrency(c: string): boolean {
  return /^[A-Z]{3}$/.test(c)
}

const pad = (n: number) => String(n).padStart(2, '0')

/**
 * The one shape of an absolute time on a screen: the user's local time,
 * `2026-11-30 06:21`, with a no-break space so that it never breaks across
 * lines. Custody's own sentences (review warnings, the grant preview, caveats
 * in words) use the same shape (custody/src/local_time.rs); both pass
 * conformance/local-time.json. Seconds are cut, never rounded up.
 */
export function when(unix: number): string {
  const d = new Date(Math.floor(unix) * 1000)
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())}\u00a0${pad(d.getHours())}:${pad(d.getMinutes())}`
}

/** The same with seconds, where they matter (when an audit event happened): `2026-11-30 06:21:48`. */
export function whenExact(unix: number): string {
  const d = new Date(Math.floor(unix) * 1000)
  return `${when(unix)}:${pad(d.getSeconds())}`
}

/** A span of seconds for people: `45s`, `9m 58s`, `7h 05m`, `3d 4h`. */
export function span(secs: number): string {
  const s = Math.max(0, Math.floor(secs))
  if (s < 60) return `${s}s`
  if (s < 3600) return `${Math.floor(s / 60)}m ${pad(s % 60)}s`
  if (s < 86400) return `${Math.floor(s / 3600)}h ${pad(Math.floor((s % 3600) / 60))}m`
  return `${Math.floor(s / 86400)}d ${Math.floor((s % 86400) / 3600)}h`
}

/** What an empty date field shows: the shape to type, never a sample date that could pass for a value. */
export const TIME_PLACEHOLDER = 'YYYY-MM-DD HH:MM'

/** A date field's attributes (the grant form's and the audit filter's): a
 *  text field in the one shape, never WebKitGTK's native widget, which greys
 *  in today's date as if it were a value. */
export const TIME_FIELD_ATTRS: Readonly<Record<string, string>> = {
  type: 'text',
  placeholder: TIME_PLACEHOLDER,
  spellcheck: 'false',
  autocomplete: 'off',
  inputmode: 'numeric',
  size: '17',
}

// The shape `when` writes, as pattern parts: the date, and hours:minutes
// with optional seconds (`whenExact`).
const DATE = String.raw`(\d{4})-(\d{2})-(\d{2})`
const CLOCK = String.raw`(\d{2}):(\d{2})(?::(\d{2}))?`

/** A time as shown (with its no-break space) anywhere in a text: dom.ts keeps each one on one line. */
export const TIME_RUN = new RegExp(`${DATE}\u00a0${CLOCK}`, 'g')

/** A time as typed: the shown shape, with a space, a `T` or the no-break space between date and clock. */
const TIME_TYPED = new RegExp(`^${DATE}[ T\u00a0]${CLOCK}$`)

/** A time field's value for a unix time: the shape `when` shows, with a plain space to type over. */
export function toTimeInput(unix: number): string {
  return when(unix).replace('\u00a0', ' ')
}

/**
 * A time typed in the shape `when` shows (`2026-11-30 06:21`; a `T`, a
 * no-break space and seconds are accepted too) as unix seconds in local
 * time, or null if it is not a real date and time (30 February, 24:00).
 */
export function fromTimeInput(v: string): number | null {
  const m = TIME_TYPED.exec(v.trim())
  if (!m) return null
  const [y, mo, d, hh, mm, ss] = m.slice(1).map((x) => (x === undefined ? 0 : Number(x)))
  const t = new Date(y, mo - 1, d, hh, mm, ss)
  // Date rolls 30 February over into March: a date that does not come back unchanged was not real.
  if (t.getFullYear() !== y || t.getMonth() !== mo - 1 || t.getDate() !== d || t.getHours() !== hh || t.getMinutes() !== mm) return null
  return Math.floor(t.getTime() / 1000)
}
