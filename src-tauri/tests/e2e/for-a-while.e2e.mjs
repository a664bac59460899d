// "Approve for a while" (issue 30, item 4) end to end through the real app:
// a real agent on the real socket asks consent for a 20.00 USD order; the
// review window offers, below the amount and off by default, to let the
// agent spend more at shop.example for a while; WebDriver ticks it (custody's
// defaults: 20.00 USD, 15 minutes), reads the grant in words before Approve
// and in the footer, and approves. The agent's APPROVED carries the short
// grant with exactly those caveats. scripts/test-app.sh runs it in its own
// session.

import { test, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { join } from 'node:path'
import { agentKey, proposal, consentRequest } from './agent.mjs'
import { PARLEY, SHOTS, tid, wd, startWithAgent, openNewestReview, armed } from './session.mjs'

let principal
let agent
const agentPub = agentKey()

before(async () => {
  ;({ principal, agent } = await startWithAgent('Ana (personal)'))
})

after(async () => {
  agent?.close()
  await wd.quit()
})

test('for a while: the review offers it off by default, says it in words, and Approve issues exactly that grant', async () => {
  agent.send(consentRequest('c1', { proposal: proposal(PARLEY, { id: 'p_1', amount: 2000 }), principal, agent: agentPub }))
  await agent.pending('c1')
  await openNewestReview()
  await wd.$(tid('for-a-while-on'))
  assert.equal(await wd.prop(tid('for-a-while-on'), 'checked'), false, 'off by default')
  await wd.click(tid('for-a-while-on'))
  const words = 'spend up to 20.00 USD more at shop.example in the next 15 minutes without asking'
  const said = await wd.until(async () => {
    const t = await wd.text(tid('for-a-while-words'))
    return t.includes(words) ? t : null
  }, 'the grant in words')
  assert.match(said, /stop all agents/)
  assert.match(await wd.text(tid('for-a-while-foot')), new RegExp(words))
  await wd.screenshot(join(SHOTS, 'review-for-a-while.png'))
  await armed('approve', 'Approve after the delay')
  await wd.click(tid('approve'))
  const fin = await agent.final('c1')
  assert.equal(fin.kind, 'APPROVED', JSON.stringify(fin))
  const caveats = fin.for_a_while?.caveats
  assert.ok(fin.for_a_while?.grant?.startsWith('pg1.'), JSON.stringify(fin))
  assert.deepEqual(caveats.slice(0, 4), [
    { svc: ['shop.example'] },
    { can: ['shop.order'] },
    { per: { max: 2000, currency: 'USD' } },
    { spend: { max: 2000, currency: 'USD' } },
  ])
  const exp = caveats[4].exp
  const now = Math.floor(Date.now() / 1000)
  assert.ok(exp > now + 14 * 60 && exp <= now + 15 * 60, `exp ${exp}`)
})
