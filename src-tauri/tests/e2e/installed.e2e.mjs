// The app as the package installed it (scripts/test-package.sh runs this
// with PARLEY_APP=/usr/bin/parley-custody and PARLEY_CLI=/usr/bin/parley,
// through scripts/test-app.sh's "installed" session): its window opens, a
// key is created, start-at-login is accepted at the first-run offer, the
// autostart entry's own Exec line then starts the app hidden and it serves
// agents, and turning it off in Settings removes the entry.

import { test, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { spawn, spawnSync } from 'node:child_process'
import { existsSync, readFileSync, readdirSync } from 'node:fs'
import { join } from 'node:path'
import { trayCount } from './tray.mjs'
import { SOCKET, tid, sleep, wd, startApp, createKey } from './session.mjs'

// The installed package's binaries, from the environment only: unlike the
// other sessions (session.mjs's APP and PARLEY), never this checkout's
// target/debug, which would test a build instead of the package.
const APP = process.env.PARLEY_APP
const PARLEY = process.env.PARLEY_CLI
const ENTRY = join(process.env.XDG_CONFIG_HOME, 'autostart', 'org.parley.custody.desktop')

function whoami() {
  const r = spawnSync(PARLEY, ['whoami', '--json', '--socket', SOCKET], { encoding: 'utf8', timeout: 10_000 })
  if (r.status !== 0) return null
  try {
    const who = JSON.parse(r.stdout)
    return who.custody?.reachable ? who : null
  } catch {
    return null
  }
}

/** Stops the custody service and the UI of this session (the service stays
 *  in the tray after the last window and after the WebDriver session):
 *  those whose environment names this session's socket, so nothing else on
 *  the machine is touched. */
function ourApps() {
  const pids = []
  for (const pid of readdirSync('/proc').filter((d) => /^\d+$/.test(d))) {
    try {
      const exe = readFileSync(`/proc/${pid}/comm`, 'utf8').trim()
      if (exe !== 'parley-custody' && exe !== 'parley-custodyd') continue
      if (/State:\s+Z/.test(readFileSync(`/proc/${pid}/status`, 'utf8'))) continue
      const env = readFileSync(`/proc/${pid}/environ`, 'utf8').split('\0')
      if (env.includes(`PARLEY_CUSTODY_SOCKET=${SOCKET}`)) pids.push(Number(pid))
    } catch {
      /* gone meanwhile, or not ours to read */
    }
  }
  return pids
}

async function stopOurApps() {
  for (const pid of ourApps()) {
    try {
      process.kill(pid, 'SIGTERM')
    } catch {}
  }
  await wd.until(() => ourApps().length === 0, 'the service and the UI of this session to exit', 20_000)
}

before(async () => {
  assert.ok(APP?.startsWith('/usr/bin/'), `PARLEY_APP must be the installed app, not ${APP}`)
  await startApp(APP)
})

after(async () => {
  await wd.quit().catch(() => {})
  await stopOurApps()
})

test('the installed app opens its window; start at login is offered once the key exists', async () => {
  await wd.$(tid('welcome'))
  assert.equal(await wd.exec('return document.title'), 'Parley Custody')
  await createKey()
  await wd.$(tid('autostart-offer'))
  assert.match(await wd.text(tid('autostart-offer')), /Start Parley Custody when you log in\?/)
  assert.equal(existsSync(ENTRY), false)
  await wd.click(tid('autostart-yes'))
  await wd.until(() => existsSync(ENTRY), 'the autostart entry')
  await wd.until(async () => !(await wd.exec(`return !document.querySelector('${tid('autostart-offer')}').hidden`)), 'the offer to go away')
})

test("the autostart entry's Exec line starts the installed app hidden, and it serves agents", async () => {
  const entry = readFileSync(ENTRY, 'utf8')
  const exec = entry.match(/^Exec=(.*)$/m)?.[1]
  assert.equal(exec, `${APP} --hidden`)
  // The window's app goes first (one custody per user).
  await wd.quit()
  await stopOurApps()
  await wd.until(() => whoami() === null, 'the first app to stop', 20_000)
  const [bin, ...args] = exec.split(' ')
  const started = Date.now()
  const child = spawn(bin, args, { stdio: 'ignore' })
  try {
    // A figure, not a limit: from the entry's command to its tray icon (the
    // service's StatusNotifierItem on the session bus).
    const iconAt = await wd.until(() => (trayCount() !== null ? Date.now() : null), 'the tray icon of the autostarted app', 60_000)
    console.log(`figure: autostart Exec line to tray icon ${iconAt - started} ms`)
    const who = await wd.until(() => whoami(), 'the autostarted app to answer on its socket', 60_000)
    console.log(`figure: autostart Exec line to custody answering ${Date.now() - started} ms`)
    assert.equal(who.custody.principals.length, 1)
    await sleep(1000)
    const windows = spawnSync('xdotool', ['search', '--onlyvisible', '--name', 'Parley Custody'], { encoding: 'utf8' })
    assert.equal(windows.stdout.trim(), '', 'started hidden: no window')
  } finally {
    child.kill('SIGTERM')
  }
})

test('turning it off in Settings removes the entry', async () => {
  await stopOurApps()
  await wd.until(() => whoami() === null, 'the hidden app to stop', 20_000)
  await startApp(APP)
  await wd.$(tid('open-settings'))
  await wd.click(tid('open-settings'))
  await wd.switchToWindow(/settings\.html/)
  await wd.$(tid('s-autostart'))
  assert.equal(await wd.exec(`return document.querySelector('${tid('s-autostart')}').checked`), true)
  await wd.click(tid('s-autostart'))
  await wd.until(() => !existsSync(ENTRY), 'the entry to be removed')
  assert.match(await wd.text(tid('s-autostart-status')), /^Off\./)
})
