// What every end-to-end session shares: where the binaries under test are,
// the WebDriver client that drives the app's windows, and the steps each
// file takes the same way (starting the app, creating the principal key,
// opening a review from the home window, calling the backend as a page
// would, `parley verify`). scripts/test-app.sh sets the environment: one
// session a file, so one app, one driver and one home window a process.

import assert from 'node:assert/strict'
import { execFileSync, spawnSync } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { userInfo } from 'node:os'
import { dirname, join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { WebDriver } from './webdriver.mjs'
import { Agent } from './agent.mjs'

export const repo = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..', '..')
const debugBuild = (name) => join(repo, 'target', 'debug', name)

// The binaries under test: from the environment, else this checkout's debug
// build. (installed.e2e.mjs does not use these: it tests the installed
// package's binaries, from the environment only, never a build here.)
export const APP = process.env.PARLEY_APP ?? debugBuild('parley-custody')
export const PARLEY = process.env.PARLEY_CLI ?? debugBuild('parley')
export const PLAYGROUND = process.env.PARLEY_PLAYGROUND ?? debugBuild('parley-playground')
export const SOCKET = process.env.PARLEY_CUSTODY_SOCKET
// Screenshots go under target/ (tests never modify tracked files);
// UPDATE_SCREENSHOTS=1 scripts/test-app.sh refreshes the README's in docs/screenshots/.
export const SHOTS = process.env.SCREENSHOTS ?? join(repo, 'target', 'screenshots')

export const tid = (id) => `[data-testid="${id}"]`
export const sleep = (ms) => new Promise((r) => setTimeout(r, ms))

export const wd = new WebDriver(process.env.WEBDRIVER_URL ?? 'http://127.0.0.1:4444')

/** The home window's handle, once startApp() has started the app. */
export let main = null

// What WebDriver starts: ui-launch.py, which knocks at custody's door and
// becomes `app` with the channel custody gives the UI it starts (handed over
// by ui-handoff.py, the session's PARLEY_CUSTODY_UI): the app runs as custody
// starts it, with an inherited channel, never one connected to the path.
const LAUNCH = join(repo, 'src-tauri', 'tests', 'e2e', 'ui-launch.py')

/** Starts the app through the driver; its first window is the home window (`main`).
 *  With `knock: false`, the app is the UI custody starts by itself next (for a request). */
export async function startApp(app = APP, { knock = true } = {}) {
  await wd.start(LAUNCH, knock ? [app] : ['--no-knock', app], 90_000)
  main = await wd.handle()
  return main
}

/** The session most files start with: the app, the principal key `label`
 *  created at the first-run offer, and an agent connected to custody's socket. */
export async function startWithAgent(label) {
  assert.ok(SOCKET, 'PARLEY_CUSTODY_SOCKET must be set (scripts/test-app.sh does)')
  await startApp()
  const principal = await createKey(label)
  const agent = await Agent.connect(SOCKET)
  return { principal, agent }
}

/** Builds the playground with cargo unless $PARLEY_PLAYGROUND names one:
 *  scripts/test-app.sh builds only the app and the CLI, and a build here is
 *  never stale. */
export function buildPlayground() {
  if (process.env.PARLEY_PLAYGROUND) return
  // The session's HOME is a fresh directory: cargo and rustup run with the user's own.
  execFileSync('cargo', ['build', '--locked', '-q', '-p', 'parley-playground'], {
    cwd: repo,
    stdio: ['ignore', 'inherit', 'inherit'],
    env: { ...process.env, HOME: userInfo().homedir },
  })
}

/** Creates the principal key at the first-run offer (with `label`, if given); returns it. */
export async function createKey(label) {
  await wd.$(tid('welcome'))
  if (label !== undefined) await wd.type(tid('key-label'), label)
  await wd.click(tid('create-key'))
  return wd.until(async () => {
    const t = await wd.text(tid('principal-key'))
    return /^ed25519:[A-Za-z0-9_-]{43}$/.test(t) ? t : null
  }, 'the new principal key')
}

/** `parley verify <token> --trust <principal> <args>`: its exit code and output. */
export function verify(token, principal, args) {
  const r = spawnSync(PARLEY, ['verify', token, '--trust', principal, ...args], { encoding: 'utf8' })
  return { code: r.status, out: `${r.stdout}${r.stderr}`.trim() }
}

/** The ids of the requests the home window lists as waiting (q1, q2, …). */
export async function listed() {
  await wd.switchTo(main)
  return listedHere()
}

function listedHere() {
  return wd.exec(`return [...document.querySelectorAll('[data-testid^="review-q"]')].map(e => e.dataset.testid.slice(7))`)
}

/** From the home window, opens the review window of request `id`. */
export async function openReview(id) {
  await wd.switchTo(main)
  await wd.click(tid(`review-${id}`))
  await wd.switchToWindow(new RegExp(`review\\.html#${id}$`))
  await wd.$(tid('approve'))
}

/** The requests whose review window openNewestReview() opened (or a test did otherwise). */
export const opened = new Set()

/** Opens, from the home window, the review window of the request that arrived
 *  after the ones already opened (custody numbers requests q1, q2, …). */
export async function openNewestReview(timeout = 15_000) {
  await wd.switchTo(main)
  const id = await wd.until(async () => {
    const ids = await listedHere()
    return ids.filter((i) => !opened.has(i)).sort((a, b) => Number(a.slice(1)) - Number(b.slice(1))).at(-1)
  }, 'a new pending request in the home window', timeout)
  opened.add(id)
  await openReview(id)
  return id
}

/** From the review window of a grant request, opens it in the grant form
 *  (to narrow, or widen, it): in the same window, never a second one. */
export async function openGrantForm() {
  const before = new Set(await wd.handles())
  const here = await wd.handle()
  await wd.click(tid('edit-grant'))
  await wd.until(async () => /grant\.html#request=q\d+$/.test(await wd.url()), 'the review window showing the grant form')
  await wd.$(tid('request-banner'))
  // Settled: custody's sentence of the request's caveats is in (its arrival
  // moves everything below it, and a click aimed before it would miss).
  await wd.until(() => wd.exec(`return !!document.querySelector('[data-testid="preview"]')?.textContent.trim()`), 'custody’s preview of the grant')
  assert.equal(await wd.handle(), here, 'the form is in the review’s own window')
  // (Compared by handle: another request's window may close meanwhile.)
  assert.deepEqual((await wd.handles()).filter((x) => !before.has(x)), [], 'no second window for the same request')
}

/** Waits until button `id` in the current window is enabled (armed after its delay). */
export function armed(id, what, timeout) {
  return wd.until(async () => (await wd.prop(tid(id), 'disabled')) === false, what, timeout)
}

/** Clicks a button that closes its own window (the click may report the window gone). */
export async function closeByButton(id) {
  await wd.click(tid(id)).catch((e) => {
    if (e.code !== 'no such window') throw e
  })
}

/** Calls the backend command `name` from the current window, as its page
 *  would: 'accepted', or the refusal as "code: message". */
export function invoke(name, args) {
  return wd.exec(
    `return window.__TAURI_INTERNALS__.invoke('call', { name: arguments[0], args: arguments[1] }).then(() => 'accepted', (e) => (e && typeof e === 'object' ? e.code + ': ' + e.message : String(e)))`,
    name,
    args,
  )
}

/** The Notify calls seen on the session bus so far (scripts/test-app.sh runs dbus-monitor into $NOTIFY_LOG). */
export function notified() {
  try {
    return readFileSync(process.env.NOTIFY_LOG, 'utf8')
  } catch {
    return ''
  }
}

/** The pid of this user's newest process named `name` (parley-custody: the UI, parley-custodyd: the service). */
export function newestPid(name) {
  return execFileSync('pgrep', ['-n', '-u', String(process.getuid()), '-x', name], { encoding: 'utf8' }).trim()
}
