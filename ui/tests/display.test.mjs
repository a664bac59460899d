// The UI's display-safety rule (ui/src/dom.ts `visible` and `bounded`, over
// the generated ui/src/display-table.ts) against the same vectors as the Rust
// side (conformance/display-safety.json), in a real headless Chromium.
// Run: npm run build && npm test

import { test } from 'node:test'
import assert from 'node:assert/strict'
import { rulesBrowser, vectors as load } from './chromium.mjs'

const vectors = load('display-safety.json')

const rules = rulesBrowser('display')

/** A vector's input: `input`, then `then_repeat: [text, n]` appended n times. */
function input(v) {
  return v.input + (v.then_repeat ? v.then_repeat[0].repeat(v.then_repeat[1]) : '')
}

test('display safety: every vector of conformance/display-safety.json (safe)', async () => {
  assert.ok(vectors.safe.length >= 30)
  const got = await rules.page.evaluate((inputs) => inputs.map((s) => window.__parleyDisplay.visible(s)), vectors.safe.map(input))
  vectors.safe.forEach((v, i) => assert.equal(got[i], v.expected, `vector ${v.name}`))
})

test('display safety: every vector of conformance/display-safety.json (bounded)', async () => {
  const got = await rules.page.evaluate(
    (cases) => cases.map(([s, max]) => window.__parleyDisplay.bounded(s, max)),
    vectors.bounded.map((v) => [input(v), v.max]),
  )
  vectors.bounded.forEach((v, i) => assert.equal(got[i], v.expected, `vector ${v.name}`))
})

test('display safety: lone surrogates (JavaScript only) are escaped', async () => {
  const got = await rules.page.evaluate(
    (units) => units.map((u) => window.__parleyDisplay.visible(String.fromCharCode(...u))),
    vectors.js_only.map((v) => v.input_utf16),
  )
  vectors.js_only.forEach((v, i) => assert.equal(got[i], v.expected, `vector ${v.name}`))
})
