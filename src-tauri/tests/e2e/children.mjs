// Child processes of an e2e test (the playground's services, agent and MCP
// client, `parley approve`): their output kept, to be waited on by pattern
// with a bound that says what was awaited and what the child said, and
// (when asked) copied into a log file, so that scripts/test-app.sh shows it
// when a run fails. One class for every session that drives real programs.

import { spawn } from 'node:child_process'
import { createWriteStream } from 'node:fs'
import { basename } from 'node:path'
import { sleep } from './session.mjs'

/** A started child process whose output (stdout and stderr) is kept. */
export class Child {
  /**
   * Starts `program` with `args`; `env` is laid over this process's
   * environment; `log`: a file that gets a copy of the output.
   */
  constructor(program, args, { env = {}, log = null, name = basename(program) } = {}) {
    this.name = name
    this.out = ''
    this.exited = null
    this.proc = spawn(program, args, { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] })
    this.exit = new Promise((r) =>
      this.proc.on('exit', (code, signal) => {
        this.exited = { code, signal }
        r(this.exited)
      }),
    )
    this.log = log ? createWriteStream(log) : null
    for (const s of [this.proc.stdout, this.proc.stderr]) {
      s.setEncoding('utf8')
      s.on('data', (d) => {
        this.out += d
        this.log?.write(d)
      })
    }
  }

  get pid() {
    return this.proc.pid
  }

  /** Waits until the output (from `from` on) matches `re`; returns the match. */
  async waitFor(re, what, { from = 0, timeout = 60_000 } = {}) {
    const deadline = Date.now() + timeout
    for (;;) {
      const m = this.out.slice(from).match(re)
      if (m) return m
      if (this.exited) throw new Error(`${this.name} exited (${JSON.stringify(this.exited)}) before ${what}; its output:\n${this.out}`)
      if (Date.now() > deadline) throw new Error(`timed out waiting for ${what} from ${this.name}; its output:\n${this.out}`)
      await sleep(100)
    }
  }

  /** Ends the child (SIGTERM, SIGKILL after 5 s) and closes its log. */
  async stop() {
    if (!this.exited) {
      this.proc.kill('SIGTERM')
      const t = setTimeout(() => this.proc.kill('SIGKILL'), 5000)
      await this.exit
      clearTimeout(t)
    }
    this.log?.end()
  }
}
