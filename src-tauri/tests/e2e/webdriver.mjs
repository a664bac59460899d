// A minimal W3C WebDriver client (fetch only, no dependencies) for driving
// the real app through tauri-driver + WebKitWebDriver.

import { writeFile } from 'node:fs/promises'

const ELEMENT = 'element-6066-11e4-a52e-4f735466cecf'

/** WebDriver key codes (W3C WebDriver, "Keyboard actions"). */
export const KEY = { Tab: '\uE004', Enter: '\uE007', Space: '\uE00D' }
const sleep = (ms) => new Promise((r) => setTimeout(r, ms))

export class WebDriver {
  constructor(base = 'http://127.0.0.1:4444') {
    this.base = base
    this.session = null
  }

  async req(method, path, body) {
    const url = `${this.base}${path.startsWith('/session/') || path === '/session' || path === '/status' ? '' : `/session/${this.session}`}${path}`
    const ctl = new AbortController()
    const timer = setTimeout(() => ctl.abort(), 60_000)
    let res
    try {
      res = await fetch(url, {
        method,
        headers: { 'content-type': 'application/json' },
        body: body === undefined ? undefined : JSON.stringify(body),
        signal: ctl.signal,
      })
    } finally {
      clearTimeout(timer)
    }
    const json = await res.json().catch(() => ({}))
    const v = json.value
    if (!res.ok || (v && typeof v === 'object' && v.error)) {
      const err = new Error(`${method} ${path}: ${v?.error ?? res.status}: ${v?.message ?? ''}`)
      err.code = v?.error
      throw err
    }
    return v
  }

  /** Waits for the driver, then starts the app. */
  async start(application, args = [], timeoutMs = 30_000) {
    const deadline = Date.now() + timeoutMs
    for (;;) {
      try {
        await this.req('GET', '/status')
        break
      } catch (e) {
        if (Date.now() > deadline) throw new Error(`tauri-driver did not answer: ${e.message}`)
        await sleep(200)
      }
    }
    const v = await this.req('POST', '/session', {
      capabilities: { alwaysMatch: { 'tauri:options': { application, args } } },
    })
    this.session = v.sessionId
    return v
  }

  async quit() {
    if (this.session) {
      await this.req('DELETE', '').catch(() => {})
      this.session = null
    }
  }

  async find(css) {
    const v = await this.req('POST', '/element', { using: 'css selector', value: css })
    return v[ELEMENT]
  }

  async findAll(css) {
    const v = await this.req('POST', '/elements', { using: 'css selector', value: css })
    return v.map((e) => e[ELEMENT])
  }

  /** Polls until `css` matches (and is displayed, unless `any`). */
  async $(css, { timeout = 15_000, any = false } = {}) {
    const deadline = Date.now() + timeout
    let last
    for (;;) {
      try {
        const id = await this.find(css)
        if (any || (await this.req('GET', `/element/${id}/displayed`))) return id
      } catch (e) {
        last = e
      }
      if (Date.now() > deadline) throw new Error(`no element ${css}: ${last?.message ?? 'not displayed'}`)
      await sleep(100)
    }
  }

  /** Clicks the first displayed element matching `css` (found again if the page replaced it meanwhile). */
  async click(css) {
    for (let attempt = 0; ; attempt++) {
      const id = await this.$(css)
      try {
        // Into the middle of the view first, as a person would scroll to it:
        // WebKitWebDriver's own scroll aligns the element's bottom with the
        // viewport's, and a layout with fractional pixels then leaves it a
        // fraction of a pixel outside, where the click is silently lost (no
        // event reaches the page, no error comes back).
        await this.req('POST', '/execute/sync', {
          script: `arguments[0].scrollIntoView({ block: 'center', inline: 'nearest' })`,
          args: [{ [ELEMENT]: id }],
        })
        await this.req('POST', `/element/${id}/click`, {})
        return
      } catch (e) {
        if (e.code !== 'stale element reference' || attempt >= 3) throw e
      }
    }
  }

  /** The rendered text of the first displayed element matching `css`. */
  async text(css) {
    return this.req('GET', `/element/${await this.$(css)}/text`)
  }

  async type(css, text, { clear = true } = {}) {
    const id = await this.$(css)
    if (clear) await this.req('POST', `/element/${id}/clear`, {})
    await this.req('POST', `/element/${id}/value`, { text })
  }

  /** Presses keys (WebDriver key codes, e.g. KEY.Tab) one after another on whatever has focus. */
  async keys(...keys) {
    const actions = keys.flatMap((k) => [{ type: 'keyDown', value: k }, { type: 'keyUp', value: k }])
    await this.req('POST', '/actions', { actions: [{ type: 'key', id: 'keyboard', actions }] })
    await this.req('DELETE', '/actions').catch(() => {})
  }

  async prop(css, name) {
    const id = await this.$(css, { any: true })
    return this.req('GET', `/element/${id}/property/${name}`)
  }

  async exec(script, ...args) {
    return this.req('POST', '/execute/sync', { script, args })
  }

  async handles() {
    return this.req('GET', '/window/handles')
  }

  async handle() {
    return this.req('GET', '/window')
  }

  async switchTo(handle) {
    await this.req('POST', '/window', { handle })
  }

  async title() {
    return this.req('GET', '/title')
  }

  async url() {
    return this.req('GET', '/url')
  }

  /** Switches to the window whose URL matches `re`, waiting for it to appear. */
  async switchToWindow(re, timeout = 15_000) {
    const deadline = Date.now() + timeout
    for (;;) {
      for (const h of await this.handles()) {
        try {
          await this.switchTo(h)
          if (re.test(await this.url())) return h
        } catch {
          /* a window closing meanwhile */
        }
      }
      if (Date.now() > deadline) throw new Error(`no window matching ${re}`)
      await sleep(200)
    }
  }

  /** Waits until the page has painted its latest state (two animation frames, then a moment). */
  async settle(ms = 400) {
    await this.req('POST', '/execute/async', {
      script: 'const done = arguments[arguments.length - 1]; requestAnimationFrame(() => requestAnimationFrame(() => done(true)))',
      args: [],
    })
    await sleep(ms)
  }

  /** A screenshot of the window, or of one element (`css`) in full. */
  async screenshot(path, css) {
    await this.settle()
    const b64 = css
      ? await this.req('GET', `/element/${await this.$(css)}/screenshot`)
      : await this.req('GET', '/screenshot')
    await writeFile(path, Buffer.from(b64, 'base64'))
  }

  /** Polls `f` until it returns a truthy value (see `until` below). */
  until(f, what, timeout = 15_000) {
    return until(f, what, timeout)
  }
}

/**
 * Polls `f` until it returns a truthy value, or throws after `timeout` ms
 * with the last error `f` threw. Also for waits outside a WebDriver session.
 */
export async function until(f, what, timeout = 15_000) {
  const deadline = Date.now() + timeout
  let last
  for (;;) {
    try {
      const v = await f()
      if (v) return v
    } catch (e) {
      last = e
    }
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}${last ? `: ${last.message}` : ''}`)
    await sleep(150)
  }
}
