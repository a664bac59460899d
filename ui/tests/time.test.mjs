// The UI's time format (ui/src/format.ts `when` and `whenExact`) against the
// same vectors as custody's sentences (conformance/local-time.json,
// custody/src/local_time.rs), in a real headless Chromium: one browser
// context per time zone, as a user in that zone would have it.
// Run: npm run build && npm test

import { test } from 'node:test'
import assert from 'node:assert/strict'
import { rulesBrowser, rulesPage, vectors as load } from './chromium.mjs'

const vectors = load('local-time.json')

const rules = rulesBrowser()

test('time format: every vector of conformance/local-time.json, each in its own zone', async () => {
  assert.ok(vectors.cases.length >= 12, 'the vector file lost its cases')
  const zones = [...new Set(vectors.cases.map((c) => c.tz))]
  assert.ok(zones.length >= 5, 'vectors in several zones')
  for (const tz of zones) {
    const page = await rulesPage(rules.browser, 'time', { timezoneId: tz })
    const cases = vectors.cases.filter((c) => c.tz === tz)
    const got = await page.evaluate(
      (unix) => unix.map((u) => [window.__parleyTime.when(u), window.__parleyTime.whenExact(u)]),
      cases.map((c) => c.unix),
    )
    cases.forEach((c, i) => {
      assert.equal(got[i][0], c.minutes, `${c.name} (${tz}): minutes`)
      assert.equal(got[i][1], c.seconds, `${c.name} (${tz}): seconds`)
    })
    await page.context().close()
  }
})

test('time format: a fraction of a second never rounds a time up', async () => {
  const page = await rulesPage(rules.browser, 'time', { timezoneId: 'UTC' })
  const got = await page.evaluate(() => [window.__parleyTime.when(59.999), window.__parleyTime.whenExact(59.999)])
  assert.deepEqual(got, ['1970-01-01\u00a000:00', '1970-01-01\u00a000:00:59'])
  await page.context().close()
})
