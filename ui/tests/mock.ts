// The Tauri IPC, mocked for the UI tests in headless Chromium (no backend):
// @tauri-apps/api/mocks answers every command from window.__PARLEY_FIXTURES__
// (set by the test before the page loads, changeable later), records each
// call in window.__parleyCalls, and lets the test emit backend events.

import { mockIPC, mockWindows } from '@tauri-apps/api/mocks'
import { emit } from '@tauri-apps/api/event'

type Fixture = unknown | { __error: string | { code: string; message: string } } | { __delay: number; value: unknown } | { __echo: true; __delay?: number; value: object }

declare global {
  interface Window {
    __PARLEY_FIXTURES__: Record<string, Fixture>
    __PARLEY_WINDOW__?: string
    __parleyCalls: [string, unknown][]
    __parleyEmit: (event: string, payload?: unknown) => Promise<void>
  }
}

window.__parleyCalls = []
mockWindows(window.__PARLEY_WINDOW__ ?? 'main')
mockIPC(
  async (outer, outerPayload) => {
    // Pages reach custody through one command, `call { name, args }`
    // (src/ipc.ts); fixtures and recorded calls are keyed by the inner name.
    const wrapped = outer === 'call'
    const inner = (outerPayload ?? {}) as { name?: string; args?: unknown }
    const cmd = wrapped ? String(inner.name) : outer
    const payload = wrapped ? inner.args : outerPayload
    window.__parleyCalls.push([cmd, JSON.parse(JSON.stringify(payload ?? {}))])
    const f = (window.__PARLEY_FIXTURES__ ?? {})[cmd]
    if (f === undefined) throw `no fixture for ${cmd}`
    // `{ __error }`: custody's refusal, `{ code, message }` as the UI process passes it on (a bare string stands for anything else thrown).
    if (typeof f === 'object' && f !== null && '__error' in f) throw (f as { __error: unknown }).__error
    // `{ __echo: true, value }`: the value with the call's `caveats` (a preview
    // of them); a `{caveats}` in its `preview` sentence becomes those caveats'
    // JSON, so a test sees which plan a shown sentence belongs to. With
    // `__delay`, the answer comes that many ms later.
    if (typeof f === 'object' && f !== null && '__echo' in f) {
      const e = f as unknown as { __delay?: number; value: { preview?: unknown } }
      const p = (payload ?? {}) as { caveats?: unknown }
      if (e.__delay) await new Promise((r) => setTimeout(r, e.__delay))
      const sentence = typeof e.value.preview === 'string' ? e.value.preview.replace('{caveats}', JSON.stringify(p.caveats)) : e.value.preview
      return { ...e.value, caveats: p.caveats, preview: sentence }
    }
    if (typeof f === 'object' && f !== null && '__delay' in f) {
      const d = f as { __delay: number; value: unknown }
      await new Promise((r) => setTimeout(r, d.__delay))
      return d.value
    }
    return f
  },
  { shouldMockEvents: true },
)
window.__parleyEmit = (event, payload) => emit(event, payload)

// The display-safety rule itself, for tests/display.test.mjs (the same
// ui/src/dom.ts the pages are built from), and the time and money formats
// for tests/time.test.mjs and tests/money.test.mjs (ui/src/format.ts).
import { visible, bounded } from '../src/dom'
import { when, whenExact, money, parseAmount } from '../src/format'
declare global {
  interface Window {
    __parleyDisplay: { visible: typeof visible; bounded: typeof bounded }
    __parleyTime: { when: typeof when; whenExact: typeof whenExact }
    __parleyMoney: { money: typeof money; parseAmount: typeof parseAmount }
  }
}
window.__parleyDisplay = { visible, bounded }
window.__parleyTime = { when, whenExact }
window.__parleyMoney = { money, parseAmount }
