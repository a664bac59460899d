// A tiny custody-protocol client (docs/custody-protocol.md): NDJSON frames
// over the custody socket, as an agent would send them. Also an Ed25519
// agent key and proposals hashed by the real `parley hash`.

import net from 'node:net'
import { generateKeyPairSync } from 'node:crypto'
import { execFileSync } from 'node:child_process'
import { mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

export class Agent {
  constructor(sock) {
    this.sock = sock
    this.frames = []
    this.waiters = []
    this.closed = false
    let buf = ''
    sock.setEncoding('utf8')
    sock.on('data', (d) => {
      buf += d
      let i
      while ((i = buf.indexOf('\n')) >= 0) {
        const line = buf.slice(0, i)
        buf = buf.slice(i + 1)
        if (line.trim()) this.push(JSON.parse(line))
      }
    })
    sock.on('close', () => {
      this.closed = true
      this.wake()
    })
    sock.on('error', () => {})
  }

  static connect(path) {
    return new Promise((resolve, reject) => {
      const s = net.createConnection(path)
      s.once('connect', () => resolve(new Agent(s)))
      s.once('error', reject)
    })
  }

  push(frame) {
    this.frames.push(frame)
    this.wake()
  }

  wake() {
    for (const w of this.waiters.splice(0)) w()
  }

  send(frame) {
    this.sock.write(`${JSON.stringify(frame)}\n`)
  }

  /** The next frame matching `pred` (frames are kept until taken). */
  async next(pred, timeoutMs = 30_000) {
    const deadline = Date.now() + timeoutMs
    for (;;) {
      const i = this.frames.findIndex(pred)
      if (i >= 0) return this.frames.splice(i, 1)[0]
      if (this.closed) throw new Error('the custody connection closed')
      const left = deadline - Date.now()
      if (left <= 0) throw new Error(`no matching frame in ${timeoutMs} ms; got ${JSON.stringify(this.frames)}`)
      await new Promise((r) => {
        const t = setTimeout(r, left)
        this.waiters.push(() => {
          clearTimeout(t)
          r()
        })
      })
    }
  }

  /** The PENDING event of request `id` (custody queued it for the human). */
  pending(id, timeoutMs = 30_000) {
    return this.next((f) => f.re === id && f.kind === 'PENDING', timeoutMs)
  }

  /** The final reply to request `id` (PENDING events skipped). */
  final(id, timeoutMs = 60_000) {
    return this.next((f) => f.re === id && f.kind !== 'PENDING', timeoutMs)
  }

  close() {
    this.sock.end()
  }
}

/** A fresh Ed25519 agent key, as `ed25519:<b64url>`. */
export function agentKey() {
  const { publicKey } = generateKeyPairSync('ed25519')
  return `ed25519:${publicKey.export({ format: 'jwk' }).x}`
}

/** A proposal with its hash computed by `parley hash` (§5.1). */
export function proposal(parley, { id, amount, currency = 'USD', risk = 'medium', undo = 1800, expiresIn = 900, effects, summary = 'Order 3 items', cost }) {
  const p = {
    id,
    capability: 'shop.order',
    summary,
    effects: effects ?? [
      { op: 'create', target: 'order' },
      { op: 'charge', target: 'card ••42', detail: `${(amount / 100).toFixed(2)} ${currency}` },
    ],
    cost: cost === undefined ? { amount, currency } : cost,
    risk,
    undo: undo === null ? null : { window: undo },
    expires: Math.floor(Date.now() / 1000) + expiresIn,
  }
  const dir = mkdtempSync(join(tmpdir(), 'parley-e2e-'))
  const file = join(dir, 'proposal.json')
  writeFileSync(file, JSON.stringify(p))
  p.hash = execFileSync(parley, ['hash', file], { encoding: 'utf8' }).trim()
  return p
}

/** The `consent` request for a proposal, as the agent sends it after `consent_required`. */
export function consentRequest(id, { proposal: p, principal, agent, service = 'shop.example', summary }) {
  return {
    custody: 1,
    id,
    op: 'consent',
    service,
    agent,
    proposal: p,
    consent: {
      proposal: p.id,
      hash: p.hash,
      service,
      capability: p.capability,
      principal,
      summary: summary ?? p.summary,
      expires: p.expires,
    },
  }
}
