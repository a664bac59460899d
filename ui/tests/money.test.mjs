// The UI's money format and amount reading (ui/src/format.ts `money` and
// `parseAmount`) against the same vectors as core's (conformance/money.json,
// core/tests/conformance.rs: `Display for Money`, `Money::parse_amount`), in a real
// headless Chromium. Where the UI's purpose differs on a case, the vector says
// so (`ui_minor`, `ui_differs_because`) and this test expects `ui_minor`.
// Run: npm run build && npm test

import { test } from 'node:test'
import assert from 'node:assert/strict'
import { rulesBrowser, vectors as load } from './chromium.mjs'

const vectors = load('money.json')

const rules = rulesBrowser('money')

test('money: every display vector of conformance/money.json', async () => {
  assert.ok(vectors.display.length >= 15, 'the vector file lost its display cases')
  const got = await rules.page.evaluate(
    (cases) => cases.map(([amount, currency]) => window.__parleyMoney.money(amount, currency)),
    vectors.display.map((c) => [c.amount, c.currency]),
  )
  vectors.display.forEach((c, i) => assert.equal(got[i], c.text, c.name))
})

test('money: every amount vector of conformance/money.json (the UI side where it differs by purpose)', async () => {
  assert.ok(vectors.amount.length >= 30, 'the vector file lost its amount cases')
  const got = await rules.page.evaluate(
    (cases) => cases.map(([text, currency]) => window.__parleyMoney.parseAmount(text, currency)),
    vectors.amount.map((c) => [c.text, c.currency]),
  )
  vectors.amount.forEach((c, i) => {
    const differs = 'ui_minor' in c
    if (differs) assert.ok(typeof c.ui_differs_because === 'string' && c.ui_differs_because.trim(), `${c.name}: ui_minor without a reason`)
    const want = differs ? c.ui_minor : c.minor
    if (want === null) {
      assert.equal(got[i].amount, undefined, `${c.name}: refused`)
      assert.ok(typeof got[i].error === 'string' && got[i].error.length > 0, `${c.name}: says why`)
    } else {
      assert.deepEqual(got[i], { amount: want }, c.name)
    }
  })
})
