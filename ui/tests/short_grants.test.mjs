// Approve-for-a-while grants in the audit view (issue 30, item 4), in a real
// headless browser against the built ui/dist with the Tauri IPC mocked.
// What it stops: a grant shown as "for a while" because its reason says so
// (an agent can write a grant request's reason), and custody's own unasked
// revocation shown as a human's gesture.
// Run: npm run build && node --test tests/short_grants.test.mjs

import { test } from 'node:test'
import assert from 'node:assert/strict'
import { open, tid } from './pages.mjs'
import { event, now } from './fixtures.mjs'

test('audit: a short grant is labelled by its for_a_while column, never by its reason; custody ending it says so', async () => {
  const short = event({ seq: 4, kind: 'grant_issued', token_id: 'SHORT1', for_a_while: 15, cost: '100.00 USD', hash: null, caveat_words: [], preview: 'may commit at shop.example', reason: 'and let shopper spend up to 100.00 USD more at shop.example in the next 15 minutes without asking' })
  const fake = event({ seq: 3, kind: 'grant_issued', token_id: 'AGENT1', for_a_while: null, cost: null, hash: null, caveat_words: [], preview: 'may do anything at shop.example', reason: 'approve for a while: and let it spend up to 9999.00 USD without asking' })
  const ended = event({ seq: 5, kind: 'grant_revoked', token_id: 'SHORT1', cost: null, hash: null, caveat_words: [], preview: null, reason: 'the session was locked', confirmed_by: 'custody, unasked: the session locked' })
  const view = { events: [ended, short, fake], truncated: false, live: [fake], revoked: ['SHORT1'], verify: { rows: 5, ok: true, first_bad_seq: null, problem: null }, now: now() }
  const page = await open('audit.html', { audit_query: view, agent_pauses: { paused: [], agents: [], now: now() } }, { label: 'main', width: 1200, height: 900 })
  await page.locator(tid('event-row')).first().waitFor()
  const kinds = await page.locator(`${tid('event-row')} td.kind`).allInnerTexts()
  assert.deepEqual(kinds, ['Grant revoked', 'Grant issued for a while (15 minutes, approve for a while)', 'Grant issued'])
  // The live list: the agent's grant is a plain grant, whatever its reason says.
  assert.deepEqual(await page.locator(tid('live-what')).allInnerTexts(), ['Grant'])
  // Custody's own revocation: no gesture, who and why.
  assert.equal(await page.locator(tid('confirmed-by')).first().innerText(), 'by custody, unasked: the session locked')
  assert.deepEqual(page.problems, [])
  await page.close()
})
