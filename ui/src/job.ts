// The job part of a review window (custody's review::JobView): a YEA job
// tool's plan, approved by typing its phrase (SPEC-approval §3). Shown
// above the effects: the tool, its input (lean, display-safe already), the
// server's words labelled as theirs elsewhere, and the phrase field.
//
// The phrase is matched here as upstream's rule says (NFC, the exact edge
// set stripped, lowercased) only to tell the human before they click;
// custody checks it again and signs nothing on a mismatch.

import type { Review } from './ipc'
import { h } from './dom'

/** U+0009–U+000D, U+0020, U+00A0, U+FEFF: exactly the set stripped at both ends. */
const EDGE = /^[\t\n\v\f\r \u00a0\ufeff]+|[\t\n\v\f\r \u00a0\ufeff]+$/g

/** Both sides as compared: NFC, edges stripped, lowercased. */
export function normalizePhrase(s: string): string {
  return s.normalize('NFC').replace(EDGE, '').toLowerCase()
}

/** Whether `typed` confirms `phrase`; an empty phrase is never confirmed. */
export function phraseMatches(typed: string, phrase: string): boolean {
  const want = normalizePhrase(phrase)
  return want !== '' && normalizePhrase(typed) === want
}

/** The job's section and its phrase field, or null for any other review. */
export function jobPart(r: Review): { section: HTMLElement; typed: () => string | null } | null {
  const job = r.job
  if (!job) return null
  const field = h('input', {
    testid: 'job-phrase',
    attrs: { type: 'text', maxlength: '200', spellcheck: 'false', autocomplete: 'off', 'aria-label': `Type ${job.phrase} to approve` },
  }) as HTMLInputElement
  const mark = h('span', { class: 'muted', testid: 'job-phrase-status' })
  field.addEventListener('input', () => {
    mark.textContent = phraseMatches(field.value, job.phrase) ? ' matches' : ''
  })
  const section = h(
    'section',
    { class: 'job', testid: 'job' },
    h('h2', null, 'A job tool’s plan'),
    h('p', null, 'Tool ', h('code', { testid: 'job-tool' }, job.tool), ', with this input:'),
    h('div', { class: 'job-input', testid: 'job-input' }, ...job.input.map((line) => h('div', null, h('code', null, line)))),
    h('p', null, 'Holder: the server’s key below (its four words and your name for it). Plan ', h('code', { title: job.plan_hash }, `${job.plan_hash.slice(0, 12)}…`)),
    h('label', null, 'To approve, type ', h('strong', { testid: 'job-phrase-wanted' }, `“${job.phrase}”`), ': ', field, mark),
  )
  return { section, typed: () => field.value }
}
