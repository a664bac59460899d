// A YEA MCP job server's approval through the real app (issue 29): the
// playground's refund desk (`parley-playground mcp-jobs`, the official MCP
// SDK over stdio) started by its scripted MCP client (`mcp-client`), both
// real child processes pointed at the app's socket. The refund comes back
// with an approval code; the real `parley approve CODE` sends it to custody;
// WebDriver plays the human in the review window: the job's tool, input and
// phrase are shown, the phrase is typed, Approve and its second confirmation
// (a refund cannot be undone) are clicked. `parley approve` writes the
// consent into the store; the client's call again RAN, and once more it is
// refused (the consent was used once). The server has no signed policy
// here (every job asks): the within-policy step is in custody/tests/mcp_jobs_pty.rs.

import { test, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { PARLEY, PLAYGROUND, SOCKET, tid, sleep, wd, startApp, createKey, openNewestReview, armed, buildPlayground } from './session.mjs'
import { Child } from './children.mjs'

const scratch = mkdtempSync(join(tmpdir(), 'parley-mcp-e2e-'))
const store = join(scratch, 'store')
const codeFile = join(scratch, 'code')
const children = []

/** A child process with the store in its environment. */
function child(program, args) {
  const c = new Child(program, args, { env: { YEA_STORE: store } })
  children.push(c)
  return c
}

before(async () => {
  assert.ok(SOCKET, 'PARLEY_CUSTODY_SOCKET must be set (scripts/test-app.sh does)')
  buildPlayground()
  await startApp()
})

after(async () => {
  for (const c of children) if (!c.exited) c.proc.kill('SIGKILL')
  await wd.quit()
  rmSync(scratch, { recursive: true, force: true })
})

test('a refund approved in the review window with its phrase runs once; the replay is refused', async () => {
  const started = Date.now()
  await createKey('Ana (mcp)')
  const client = child(PLAYGROUND, [
    'mcp-client', '--no-policy', '--store', store, '--code-file', codeFile, '--wait', '120', '--',
    PLAYGROUND, 'mcp-jobs', '--key', join(scratch, 'server.key'), '--store', store,
    '--policy-json', join(scratch, 'none.json'), '--custody-socket', SOCKET,
  ])
  await client.waitFor(/server: NOT RUN: /, 'the refund held for approval')
  await client.waitFor(/yea approve pc1\.\S+/, 'the line for the person')
  while (!existsSync(codeFile)) await sleep(100)
  const code = readFileSync(codeFile, 'utf8')

  const approve = child(PARLEY, ['approve', '--socket', SOCKET, code])
  await openNewestReview(30_000)
  assert.equal(await wd.text(tid('job-tool')), 'refund')
  assert.match(await wd.text(tid('job-input')), /A-1001/)
  assert.match(await wd.text(tid('job-phrase-wanted')), /A-1001/)
  await wd.type(tid('job-phrase'), 'A-1001')
  await armed('approve', 'Approve after the delay')
  await wd.click(tid('approve'))
  // A refund cannot be undone: the second, explicit confirmation.
  await armed('confirm-approve', 'the second confirmation')
  await wd.click(tid('confirm-approve'))

  const done = await approve.exit
  assert.deepEqual(done, { code: 0, signal: null }, approve.out)
  assert.match(approve.out, /consent .*is in /)
  await client.waitFor(/server: RAN: Refund 30\.00 USD to Chen for order A-1001/, 'the refund RAN')
  await client.waitFor(/already used once; nothing ran/, 'the replay refused')
  assert.deepEqual(await client.exit, { code: 0, signal: null }, client.out)
  console.log(`mcp session: the loop took ${Date.now() - started} ms`)
})
