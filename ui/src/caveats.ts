// The grant form's logic, without the DOM: the form's values become the
// exact caveats (Parley §6.3) that will be signed, errors per field and
// warnings. The grant in words is custody's sentence of these caveats (the
// form asks for it with grant_preview; custody/src/review/preview.rs). The engine checks the caveats again before
// signing (custody/src/review/grant.rs), so this is for the human, not the guard.
//
// Filling the form from a request must never widen it by accident: a value
// the form's fields cannot hold exactly (an empty list, a service id with a
// space or a comma, a currency not in capitals) is kept verbatim as an extra
// condition instead of being reinterpreted. The engine names any widening
// that remains and the form shows it before Issue (custody/src/widening.rs).

import { money, parseAmount, isCurrency, fromTimeInput, toTimeInput, span, ZERO_DECIMAL } from './format'
import { VERB_WORDS } from './custody-constants'

/** The verbs a grant can name (Parley §4). */
export const VERBS = ['HELLO', 'ASK', 'INTENT', 'COMMIT', 'UNDO', 'EXPAND'] as const

/** What each verb lets the agent do, in words: generated from custody's table, which its grant sentence uses. */
export { VERB_WORDS }

/** Expiry presets, seconds from now. */
export const PRESETS: Record<string, number> = { '1h': 3600, '8h': 8 * 3600, '24h': 86400, '7d': 7 * 86400 }

export type Risk = '' | 'low' | 'medium' | 'high'
export type Field =
  | 'agent'
  | 'services'
  | 'verbs'
  | 'capabilities'
  | 'currency'
  | 'per'
  | 'spend'
  | 'expiry'
  | 'notBefore'
  | 'measures'

export interface GrantFormValues {
  agent: string
  services: string
  verbs: string[]
  capabilities: string
  risk: Risk
  currency: string
  per: string
  spend: string
  expiry: string // a PRESETS key or 'custom'
  customExpiry: string // a time as `when` shows it (format.ts)
  notBefore: string // a time as `when` shows it, or ''
  /** YEA limits over measures (`each`/`total`, §6.3), one row each. */
  measures: MeasureLimit[]
  /** Caveats of a request that the form has no field for: kept verbatim (dropping one would widen the grant). */
  extra: unknown[]
}

/** One YEA limit as typed: `each` (per commit) or `total` (over the grant's life). */
export interface MeasureLimit {
  kind: 'each' | 'total'
  /** The measure: spend, emails, messages, deletions, invites, or any measure name. */
  of: string
  /** The amount as typed: `40.00` (money, in major units), `3` (a count), `1.5` (a unit). */
  amount: string
  /** A currency for money (spend), another unit (GB), or empty for a count. */
  unit: string
}

/** The measures YEA's conventions name; any other measure name works too. */
export const MEASURES = ['spend', 'emails', 'messages', 'deletions', 'invites'] as const

const MEASURE_NAME = /^[a-z][a-z0-9_.-]{0,63}$/
const UNIT = /^[A-Za-z0-9_./%-]{1,32}$/

/** Reads one typed limit into its caveat, or says what is wrong. */
function measureCaveat(m: MeasureLimit): { caveat?: Caveat; error?: string } {
  const of = m.of.trim()
  const unit = m.unit.trim()
  if (!MEASURE_NAME.test(of)) return { error: `“${of.slice(0, 40)}” is not a measure name: lowercase letters, digits, _ . - (like emails)` }
  if (unit && !UNIT.test(unit)) return { error: `“${unit.slice(0, 40)}” is not a unit: letters, digits and _ . / % - (like USD or GB)` }
  let max: number
  let scale: number
  if (isCurrency(unit)) {
    // Money at its currency's minor-unit scale, as the conventions agree.
    const r = parseAmount(m.amount, unit)
    if (r.error || r.amount === undefined) return { error: `${of}: ${r.error ?? 'enter an amount'}` }
    max = r.amount
    scale = ZERO_DECIMAL.includes(unit) ? 0 : 2
  } else {
    const t = /^(\d{1,16})(?:\.(\d{1,18}))?$/.exec(m.amount.trim())
    if (!t) return { error: `${of}: a whole number or a decimal, like 3 or 1.5` }
    if (!unit && t[2]) return { error: `${of}: a count is a whole number (give a unit for a decimal)` }
    scale = t[2]?.length ?? 0
    const n = Number(`${t[1]}${t[2] ?? ''}`)
    if (!Number.isSafeInteger(n)) return { error: `${of}: too large to sign exactly` }
    max = n
  }
  if (of === 'spend' && !isCurrency(unit)) return { error: 'spend is money: give its currency (like USD) as the unit' }
  const limit: Record<string, unknown> = { of, max }
  if (scale) limit.scale = scale
  if (unit) limit.unit = unit
  return { caveat: { [m.kind]: limit } }
}

export type Caveat = Record<string, unknown>

export interface GrantPlan {
  caveats: Caveat[]
  errors: Partial<Record<Field, string>>
  warnings: string[]
  exp: number | null
  ok: boolean
}

export const AGENT_KEY = /^ed25519:[A-Za-z0-9_-]{43}$/
const CAPABILITY = /^(\*|[A-Za-z0-9_-]+(\.[A-Za-z0-9_-]+)*(\.\*)?)$/

/** Splits a list typed by a person (commas or new lines; each item trimmed), dropping
 *  duplicates. A space inside an item stays in it (and the item is then refused), so
 *  "shop example" never silently becomes two services. */
export function splitList(s: string): string[] {
  const out: string[] = []
  for (const raw of s.split(/[,\n]+/)) {
    const part = raw.trim()
    if (part && !out.includes(part)) out.push(part)
  }
  return out
}

/** Whether a requested list can be shown in a text field and read back exactly. */
function representable(l: string[]): boolean {
  return l.length > 0 && l.every((x) => x !== '' && !/[\s,]/.test(x))
}

function isPrintableAscii(s: string): boolean {
  return /^[\x21-\x7e]+$/.test(s)
}


/** Turns the form into caveats, errors and warnings. `now` in unix seconds. */
export function plan(v: GrantFormValues, now: number, maxLifetime: number): GrantPlan {
  const errors: Partial<Record<Field, string>> = {}
  const warnings: string[] = []
  const caveats: Caveat[] = []

  const agent = v.agent.trim()
  if (agent === '') errors.agent = 'paste the agent’s key (ed25519:…) or pick a known agent'
  else if (!AGENT_KEY.test(agent)) errors.agent = 'an agent key looks like ed25519: followed by 43 letters, digits, - or _'

  const kept = (name: string) => v.extra.some((c) => typeof c === 'object' && c !== null && name in c)
  const services = splitList(v.services)
  if (services.length === 0 && !kept('svc')) errors.services = 'name at least one service (a grant without one works everywhere)'
  for (const s of services) {
    if (s.length > 253) errors.services = 'a service id has at most 253 characters'
    else if (Array.from(s).some((ch) => (ch.codePointAt(0) ?? 0) <= 0x20 || ch === '\u007f'))
      errors.services = 'a service id has no spaces or control characters'
  }
  if (services.some((s) => !isPrintableAscii(s))) {
    warnings.push('A service id contains non-ASCII characters: check it for look-alike letters.')
  }
  if (services.length) caveats.push({ svc: services })

  const verbs = VERBS.filter((x) => v.verbs.includes(x))
  if (verbs.length === 0 && !kept('verbs')) errors.verbs = 'choose at least one verb'
  else if (verbs.length) caveats.push({ verbs: [...verbs] })

  const caps = splitList(v.capabilities)
  for (const c of caps) {
    if (!CAPABILITY.test(c)) errors.capabilities = `“${c.slice(0, 40)}” is not a pattern: use an exact name (shop.order), * or a prefix ending in .* (shop.*)`
  }
  if (caps.length) caveats.push({ can: caps })
  if (caps.includes('*')) warnings.push('The capability pattern * allows every capability.')

  // Never changed for the human (usd is not USD to a service).
  const currency = v.currency.trim()
  const wantsMoney = v.per.trim() !== '' || v.spend.trim() !== ''
  if (wantsMoney && !isCurrency(currency)) errors.currency = 'a three-letter currency code in capitals, like USD'
  let per: number | undefined
  let spend: number | undefined
  if (v.per.trim() !== '') {
    const r = parseAmount(v.per, currency)
    if (r.error) errors.per = r.error
    else per = r.amount
  }
  if (v.spend.trim() !== '') {
    const r = parseAmount(v.spend, currency)
    if (r.error) errors.spend = r.error
    else spend = r.amount
  }
  // YEA limits over measures; never mixed with Parley's per/spend in one grant
  // (each dialect refuses the other's limits as unknown caveats).
  const rows = v.measures.filter((m) => m.of.trim() !== '' || m.amount.trim() !== '')
  for (const m of rows) {
    const r = measureCaveat(m)
    if (r.error) errors.measures = r.error
    else if (r.caveat) caveats.push(r.caveat)
  }
  if (rows.length && wantsMoney) {
    errors.measures = 'a grant limits either with per action / in total (Parley) or with measured limits (YEA), not both: clear one of them'
  }
  if (per !== undefined && isCurrency(currency)) caveats.push({ per: { max: per, currency } })
  if (spend !== undefined && isCurrency(currency)) caveats.push({ spend: { max: spend, currency } })
  if (per !== undefined && spend === undefined && !errors.spend) {
    warnings.push('A per-action cap without a total (spend) can be dodged by splitting a purchase: add a total.')
  }
  if (per !== undefined && spend !== undefined && spend < per) {
    warnings.push('The total is lower than the per-action cap: no single action can reach the cap.')
  }
  if (v.risk) caveats.push({ risk: v.risk })
  if (verbs.includes('COMMIT') && per === undefined && spend === undefined && !rows.length && !v.risk) {
    warnings.push('COMMIT with no spending limit and no risk ceiling: the agent can commit anything these services offer without asking you.')
  }

  let exp: number | null = null
  if (v.expiry === 'custom') {
    const t = fromTimeInput(v.customExpiry)
    if (t === null) errors.expiry = 'type the date and time the grant ends, like 2026-12-24 18:00'
    else if (t <= now) errors.expiry = 'the end is in the past'
    else exp = t
  } else if (PRESETS[v.expiry] !== undefined) {
    exp = now + PRESETS[v.expiry]
  } else {
    errors.expiry = 'choose when the grant ends (a grant always expires)'
  }
  if (exp !== null && exp > now + maxLifetime) {
    errors.expiry = `at most ${span(maxLifetime)} from now (the limit set in Settings)`
    exp = null
  }
  let nbf: number | null = null
  if (v.notBefore.trim() !== '') {
    nbf = fromTimeInput(v.notBefore)
    if (nbf === null) errors.notBefore = 'a date and time like 2026-12-24 18:00, or leave it empty'
    else if (exp !== null && nbf >= exp) errors.notBefore = 'must be before the end'
  }
  if (nbf !== null && !errors.notBefore) caveats.push({ nbf })
  for (const x of v.extra) caveats.push(x as Caveat)
  if (exp !== null) caveats.push({ exp })

  return { caveats, errors, warnings, exp, ok: Object.keys(errors).length === 0 }
}

/** Fills the form from requested caveats. The first caveat of each kind fills
 *  its field; anything else is kept verbatim in `extra` (never dropped). */
export function fromCaveats(list: unknown[]): Partial<GrantFormValues> {
  const out: Partial<GrantFormValues> = { extra: [] }
  const seen = new Set<string>()
  const strings = (x: unknown): string[] | null =>
    Array.isArray(x) && x.every((s) => typeof s === 'string') ? (x as string[]) : null
  for (const c of list) {
    const keep = () => out.extra!.push(c)
    if (typeof c !== 'object' || c === null || Array.isArray(c) || Object.keys(c).length !== 1) {
      keep()
      continue
    }
    const [name, value] = Object.entries(c as Record<string, unknown>)[0]
    if (seen.has(name)) {
      keep()
      continue
    }
    switch (name) {
      case 'svc':
      case 'verbs':
      case 'can': {
        const l = strings(value)
        // An empty list allows nothing, and an id with a space or a comma
        // would be read back as another list: keep such a caveat as it is.
        if (!l || !representable(l)) {
          keep()
          break
        }
        seen.add(name)
        if (name === 'svc') out.services = l.join(', ')
        else if (name === 'verbs') out.verbs = l
        else out.capabilities = l.join(', ')
        break
      }
      case 'per':
      case 'spend': {
        const m = value as { max?: unknown; currency?: unknown }
        const cur = typeof m?.currency === 'string' ? m.currency : null
        if (
          typeof m !== 'object' ||
          !Number.isSafeInteger(m.max) ||
          !cur ||
          !isCurrency(cur) ||
          (out.currency !== undefined && out.currency !== cur)
        ) {
          keep()
          break
        }
        seen.add(name)
        out.currency = cur
        out[name] = money(m.max as number, cur).split(' ')[0]
        break
      }
      case 'each':
      case 'total': {
        // A YEA limit the row can hold exactly (money at its minor-unit
        // scale, a count, or a decimal with a unit); anything else is kept.
        const l = value as { of?: unknown; max?: unknown; scale?: unknown; unit?: unknown }
        const keys = typeof l === 'object' && l !== null ? Object.keys(l) : []
        const unit = typeof l?.unit === 'string' ? l.unit : ''
        const scale = l?.scale === undefined ? 0 : l.scale
        const ok =
          keys.every((k) => ['of', 'max', 'scale', 'unit'].includes(k)) &&
          typeof l.of === 'string' &&
          MEASURE_NAME.test(l.of) &&
          Number.isSafeInteger(l.max) &&
          (l.max as number) >= 0 &&
          Number.isSafeInteger(scale) &&
          (scale as number) >= 0 &&
          (scale as number) <= 18 &&
          (l.unit === undefined || (typeof l.unit === 'string' && UNIT.test(l.unit))) &&
          (!isCurrency(unit) || scale === (ZERO_DECIMAL.includes(unit) ? 0 : 2)) &&
          (unit !== '' || scale === 0)
        if (!ok) {
          keep()
          break
        }
        const digits = String(l.max).padStart((scale as number) + 1, '0')
        const amount = scale ? `${digits.slice(0, -(scale as number))}.${digits.slice(-(scale as number))}` : digits
        ;(out.measures ??= []).push({ kind: name, of: l.of as string, amount, unit })
        break
      }
      case 'risk':
        if (value === 'low' || value === 'medium' || value === 'high') {
          seen.add(name)
          out.risk = value
        } else keep()
        break
      case 'exp':
        if (Number.isSafeInteger(value)) {
          seen.add(name)
          out.expiry = 'custom'
          out.customExpiry = toTimeInput(value as number)
        } else keep()
        break
      case 'nbf':
        if (Number.isSafeInteger(value)) {
          seen.add(name)
          out.notBefore = toTimeInput(value as number)
        } else keep()
        break
      default:
        keep()
    }
  }
  return out
}

/** An empty form: 8 hours, ASK and INTENT, no money. */
export function emptyForm(): GrantFormValues {
  return {
    agent: '',
    services: '',
    verbs: ['ASK', 'INTENT'],
    capabilities: '',
    risk: '',
    currency: 'USD',
    per: '',
    spend: '',
    expiry: '8h',
    customExpiry: '',
    notBefore: '',
    measures: [],
    extra: [],
  }
}
