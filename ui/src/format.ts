// Money, times and durations for people.

/** Currencies without minor units (same list as parley-core's money.rs). */
export const ZERO_DECIMAL = ['JPY', 'KRW', 'VND', 'CLP', 'ISK', 'UGX', 'XAF', 'XOF']

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

/** Local time, short: `18:00` today, `Tue 2 Dec 18:00` otherwise (with the year if not this year). */
export function localTime(unix: number, now: number = Date.now() / 1000): string {
  const d = new Date(unix * 1000)
  const n = new Date(now * 1000)
  const hm = `${pad(d.getHours())}:${pad(d.getMinutes())}`
  const sameDay =
    d.getFullYear() === n.getFullYear() && d.getMonth() === n.getMonth() && d.getDate() === n.getDate()
  if (sameDay) return hm
  const day = d.toLocaleDateString('en-GB', {
    weekday: 'short',
    day: 'numeric',
    month: 'short',
    ...(d.getFullYear() === n.getFullYear() ? {} : { year: 'numeric' }),
  })
  return `${day} ${hm}`
}

/** Full local date and time, for titles and tables: `2026-12-02 18:00:05`. */
export function fullTime(unix: number): string {
  const d = new Date(unix * 1000)
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())} ${pad(d.getHours())}:${pad(
    d.getMinutes(),
  )}:${pad(d.getSeconds())}`
}

/** A span of seconds for people: `45s`, `9m 58s`, `7h 05m`, `3d 4h`. */
export function span(secs: number): string {
  const s = Math.max(0, Math.floor(secs))
  if (s < 60) return `${s}s`
  if (s < 3600) return `${Math.floor(s / 60)}m ${pad(s % 60)}s`
  if (s < 86400) return `${Math.floor(s / 3600)}h ${pad(Math.floor((s % 3600) / 60))}m`
  return `${Math.floor(s / 86400)}d ${Math.floor((s % 86400) / 3600)}h`
}

/** A `datetime-local` input's value for a unix time (local time, minutes). */
export function toLocalInput(unix: number): string {
  const d = new Date(unix * 1000)
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())}T${pad(d.getHours())}:${pad(
    d.getMinutes(),
  )}`
}

/** A `datetime-local` input's value as unix seconds, or null if empty/invalid. */
export function fromLocalInput(v: string): number | null {
  if (!/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2})?$/.test(v)) return null
  const t = new Date(v).getTime()
  return Number.isFinite(t) ? Math.floor(t / 1000) : null
}
