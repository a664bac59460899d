// The desktop split's figures (scripts/bench-app.sh runs this inside a
// private X server, session bus and unlocked keyring): the custody
// service's start to its tray icon, its idle memory with no window, the
// time from a consent request on the custody socket to its review window
// on screen (the UI process started for it included), and the memory of
// the service with one review window open (the UI process and its WebKit
// processes included). Figures, not limits: printed with the goals of
// issue 16 next to them; this script fails only when it cannot measure.

import { spawn, execFileSync, spawnSync } from 'node:child_process'
import { readFileSync, readdirSync, existsSync, mkdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { Agent, agentKey, proposal, consentRequest } from '../src-tauri/tests/e2e/agent.mjs'
import { trayNames, trayItems, trayClick } from '../src-tauri/tests/e2e/tray.mjs'

const SERVICE = process.env.CUSTODY_SERVICE
const PARLEY = process.env.PARLEY_CLI
const RUNS = Number(process.env.BENCH_RUNS ?? 20)
const RUN = process.env.XDG_RUNTIME_DIR
const UI_SOCK = join(RUN, 'parley-custody-ui', 'ui.sock')
const SOCK = process.env.PARLEY_CUSTODY_SOCKET
const sleep = (ms) => new Promise((r) => setTimeout(r, ms))

// Polls every 20 ms: finer would only add X clients (xdotool) competing
// with the UI process for the X server while it starts.
async function until(f, what, timeout = 30_000) {
  const end = Date.now() + timeout
  for (;;) {
    const v = await f()
    if (v) return v
    if (Date.now() > end) throw new Error(`bench: timed out waiting for ${what}`)
    await sleep(20)
  }
}

/** Resident and proportional set size of `pid` in KiB (0, 0 if gone). */
function mem(pid) {
  try {
    const rss = Number(readFileSync(`/proc/${pid}/status`, 'utf8').match(/VmRSS:\s+(\d+)/)?.[1] ?? 0)
    const pss = Number(readFileSync(`/proc/${pid}/smaps_rollup`, 'utf8').match(/Pss:\s+(\d+)/)?.[1] ?? 0)
    const threads = Number(readFileSync(`/proc/${pid}/status`, 'utf8').match(/Threads:\s+(\d+)/)?.[1] ?? 0)
    return { rss, pss, threads }
  } catch {
    return { rss: 0, pss: 0, threads: 0 }
  }
}

/** `pid` and every process below it. */
function tree(pid) {
  const kids = new Map()
  for (const d of readdirSync('/proc').filter((d) => /^\d+$/.test(d))) {
    try {
      const ppid = Number(readFileSync(`/proc/${d}/stat`, 'utf8').split(') ')[1].split(' ')[1])
      kids.set(ppid, [...(kids.get(ppid) ?? []), Number(d)])
    } catch {}
  }
  const out = []
  const walk = (p) => {
    out.push(p)
    for (const k of kids.get(p) ?? []) walk(k)
  }
  walk(pid)
  return out
}

function comm(pid) {
  try {
    return readFileSync(`/proc/${pid}/comm`, 'utf8').trim()
  } catch {
    return '?'
  }
}

function uiPid(service) {
  return tree(service).find((p) => comm(p) === 'parley-custody')
}

/** The review window's X id, or null (see reviewShown). */
function reviewWindow() {
  const r = spawnSync('xdotool', ['search', '--onlyvisible', '--name', '(Review request|\\(q[0-9]+\\)) — Parley Custody'], { encoding: 'utf8' })
  return r.status === 0 ? r.stdout.trim().split('\n')[0] || null : null
}

/** Where the review's footer button `which` is on screen: the footer is
 *  sticky at the window's bottom, Deny at its left, Approve after Deny and
 *  "Deny and pause" (docs/screenshots/review.png, 620 px wide). */
function buttonAt(win, which) {
  const g = execFileSync('xdotool', ['getwindowgeometry', '--shell', win], { encoding: 'utf8' })
  const v = Object.fromEntries(g.trim().split('\n').map((l) => l.split('=')))
  const x = Number(v.X) + (which === 'approve' ? 411 : 61)
  return [x, Number(v.Y) + Number(v.HEIGHT) - 80]
}

/** A real pointer click (X events, as a person's) on the review's `which` button. */
function press(win, which) {
  const [x, y] = buttonAt(win, which)
  execFileSync('xdotool', ['mousemove', String(x), String(y)])
  spawnSync('xdotool', ['windowfocus', win])
  execFileSync('xdotool', ['click', '1'])
}

function reviewShown() {
  // A review window opens as "Review request — Parley Custody", then is titled
  // after its request ("Approve 10.01 USD at shop.example? (q1) — Parley Custody").
  const r = spawnSync('xdotool', ['search', '--onlyvisible', '--name', '(Review request|\\(q[0-9]+\\)) — Parley Custody'], { encoding: 'utf8' })
  return r.status === 0 && r.stdout.trim() !== ''
}

const mb = (kib) => (kib / 1024).toFixed(1)
const pct = (xs, p) => {
  const s = [...xs].sort((a, b) => a - b)
  return s[Math.min(s.length - 1, Math.ceil((p / 100) * s.length) - 1)]
}

// A principal key, made by the human's own CLI before the service starts
// (the UI channel belongs to the UI the service starts; its path is only a door).
const made = spawnSync(PARLEY, ['custody', 'keys', 'create', '--label', 'bench', '--data-dir', process.env.PARLEY_CUSTODY_DATA], { encoding: 'utf8' })
const principal = (made.stderr.match(/ed25519:[A-Za-z0-9_-]+/) || [])[0]
if (made.status !== 0 || !principal) throw new Error(`bench: no key: ${made.stderr}`)

const t0 = performance.now()
const svc = spawn(SERVICE, ['--approver', 'desktop', '--hidden'], { stdio: ['ignore', 'ignore', 'inherit'] })
await until(() => trayNames().length > 0, 'the tray icon on the session bus')
const toTray = performance.now() - t0
await until(() => existsSync(UI_SOCK) && existsSync(SOCK), 'the sockets')
const toSockets = performance.now() - t0


await sleep(3000)
const idle = mem(svc.pid)

const times = []
const after = []
let withReview = null
const me = agentKey()
// BENCH_DECIDE=1 (scripts/bench-app.sh's default): each session also
// approves one request (OS authentication, silent as root through polkit)
// and denies another, each opened from its notification (dunst), with the
// notification after Approve: every path a person's session takes.
const DECIDE = process.env.BENCH_DECIDE === '1'
const decided = { approved: 0, denied: 0 }

/** Opens the newest request's review from its notification (or, with no
 *  notification daemon, the service opened it) and waits for it. */
async function reviewOf(i) {
  if (DECIDE) {
    await until(() => spawnSync('dunstctl', ['count', 'displayed'], { encoding: 'utf8' }).stdout.trim() !== '0', `the notification ${i}`, 20_000)
    execFileSync('dunstctl', ['action', '0'])
  }
  return until(() => reviewWindow(), `review window ${i}`, 60_000)
}

/** One request decided with a click on `which`; the agent's final answer. */
async function decide(agent, id, which, ask = false) {
  if (ask) {
    // Only this request's notification on screen, for its action.
    execFileSync('dunstctl', ['close-all'])
    const p = proposal(PARLEY, { id: `p_${id}`, amount: 3000 + Number(id.slice(1)) })
    agent.send(consentRequest(id, { proposal: p, principal, agent: me }))
    await agent.pending(id)
  }
  const win = await (ask ? reviewOf(id) : until(() => reviewWindow(), `review window ${id}`))
  // Armed once the window has been in front for custody's delay (1.5 s).
  spawnSync('xdotool', ['windowfocus', win])
  await sleep(2200)
  let fin = null
  for (let tries = 0; tries < 5 && !fin; tries++) {
    press(win, which)
    fin = await Promise.race([agent.final(id), sleep(4000).then(() => null)])
  }
  if (!fin) throw new Error(`bench: no answer to ${id} after clicking ${which}`)
  const want = which === 'approve' ? 'APPROVED' : 'DENIED'
  if (fin.kind !== want) throw new Error(`bench: ${id}: ${JSON.stringify(fin)}, not ${want}`)
  decided[which === 'approve' ? 'approved' : 'denied']++
  await until(() => !reviewWindow(), `the review ${id} to close`, 20_000)
}

for (let i = 1; i <= RUNS; i++) {
  // A UI session as a person has one: the app opened from the tray (its home
  // window reads the queue, the agents and the audit log), then a review.
  const open = trayItems().find(([, l]) => l === 'Open Parley Custody')
  if (!open) throw new Error('bench: no "Open Parley Custody" in the tray menu')
  trayClick(open[0])
  await until(() => uiPid(svc.pid), `the UI process ${i}`, 30_000)
  await sleep(2500)
  const agent = await Agent.connect(SOCK)
  const p = proposal(PARLEY, { id: `p_b${i}`, amount: 1000 + i })
  if (DECIDE) execFileSync('dunstctl', ['close-all'])
  const sent = performance.now()
  agent.send(consentRequest(`b${i}`, { proposal: p, principal, agent: me }))
  if (DECIDE) await reviewOf(i)
  else await until(() => reviewShown(), `review window ${i}`, 60_000)
  times.push(performance.now() - sent)
  if (withReview === null) {
    await sleep(2000)
    const procs = tree(svc.pid)
    withReview = procs.map(mem).reduce((a, b) => ({ rss: a.rss + b.rss, pss: a.pss + b.pss }), { rss: 0, pss: 0 })
    withReview.procs = procs.length
    withReview.each = procs.map((p) => ({ comm: comm(p), ...mem(p) }))
  }
  if (DECIDE) {
    // This request approved, then another denied.
    await decide(agent, `b${i}`, 'approve')
    await decide(agent, `d${i}`, 'deny', true)
  }
  // Next run starts with no UI process: the agent withdraws, the UI exits.
  const pid = uiPid(svc.pid)
  agent.close()
  if (pid) {
    process.kill(pid, 'SIGTERM')
    await until(() => !existsSync(`/proc/${pid}`) || /State:\s+Z/.test(readFileSync(`/proc/${pid}/status`, 'utf8')), 'the UI to exit', 20_000)
  }
  await until(() => !reviewShown(), 'the review window to close', 20_000)
  // The service alone again, idle: its memory after this UI session.
  await sleep(1500)
  after.push(mem(svc.pid))
  if (process.env.BENCH_DETAIL) {
    const maps = readFileSync(`/proc/${svc.pid}/smaps`, 'utf8').split('\n')
    let cur = '', sizes = {}
    for (const l of maps) {
      const head = l.match(/^[0-9a-f]+-[0-9a-f]+ \S+ \S+ \S+ \S+\s*(.*)$/)
      if (head) cur = head[1] || '[anon]'
      const r = l.match(/^Rss:\s+(\d+)/)
      if (r) sizes[cur] = (sizes[cur] ?? 0) + Number(r[1])
    }
    const top = Object.entries(sizes).sort((a, b) => b[1] - a[1]).slice(0, 6)
    console.log(`session ${i}: RSS ${mb(after.at(-1).rss)} MiB, threads ${after.at(-1).threads}; ${top.map(([k, v]) => `${k.split('/').pop()} ${mb(v)}`).join('; ')}`)
  }
}
svc.kill('SIGTERM')

const lines = [
  `service start → tray icon on the bus: ${toTray.toFixed(0)} ms (goal < 1000 ms; sockets ready at ${toSockets.toFixed(0)} ms)`,
  `service idle, no window: RSS ${mb(idle.rss)} MiB, PSS ${mb(idle.pss)} MiB (goal < 30 MB)`,
  `one review window, everything (${withReview.procs} processes: service, UI, WebKit): RSS ${mb(withReview.rss)} MiB, PSS ${mb(withReview.pss)} MiB (goal < 250 MB)`,
  `  of which: ${withReview.each.map((p) => `${p.comm} RSS ${mb(p.rss)} / PSS ${mb(p.pss)} MiB`).join('; ')}`,
  `service idle after each UI session (open the UI, a review${DECIDE ? ', approved with OS authentication and its notifications, then another denied' : ''}, close the UI), ${after.length} sessions${DECIDE ? ` (${decided.approved} approved, ${decided.denied} denied)` : ''}: RSS ${after.map((m) => mb(m.rss)).join(', ')} MiB; max ${mb(Math.max(...after.map((m) => m.rss)))} MiB, threads ${after.map((m) => m.threads).join(', ')}, last − first ${mb(after.at(-1).rss - after[0].rss)} MiB (goal < 30 MB, flat)`,
  `consent request → review window on screen${DECIDE ? ' (opened from its notification)' : ''}, UI process started each time, ${RUNS} runs: p50 ${pct(times, 50).toFixed(0)} ms, p95 ${pct(times, 95).toFixed(0)} ms, max ${Math.max(...times).toFixed(0)} ms (goal p95 < 400 ms)`,
]
for (const l of lines) console.log(`figure: ${l}`)
if (process.env.BENCH_OUT) {
  mkdirSync(join(process.env.BENCH_OUT, '..'), { recursive: true })
  writeFileSync(process.env.BENCH_OUT, lines.join('\n') + '\n')
}
process.exit(0)
