// The buttons that sign (Approve, its second confirmation, the grant form's
// Issue) answer the pointer only. A review window can open focused under the
// human's typing; Tab then Space or Enter must never approve it. So these
// buttons are out of the Tab order, ignore key presses, and fire on either
//  - a trusted pointer click (a click the keyboard made has `detail === 0`
//    and an empty `pointerType`; one a script made is not trusted), or
//  - pressing and holding the pointer on the button for HOLD_MS.
// The backend refuses an approval that names no gesture, and checks the
// window's focus and arming delay itself (custody/src/desktop/permissions.rs, in the service).

import type { Gesture } from './ipc'

/** How long the pointer must be held down on the button. */
export const HOLD_MS = 1000

/** Whether `ev` is a click a person made with a pointer. */
export function pointerMade(ev: MouseEvent): boolean {
  if (!ev.isTrusted || ev.detail === 0) return false
  const type = (ev as PointerEvent).pointerType
  return type === undefined || type !== ''
}

/** Makes `btn` a pointer-only button that calls `fire` with how it was pressed.
 *  `ready()` says whether it may fire now (armed, enabled). */
export function pointerOnly(btn: HTMLButtonElement, ready: () => boolean, fire: (g: Gesture) => void): void {
  btn.tabIndex = -1
  btn.dataset.pointerOnly = 'true'
  btn.addEventListener('keydown', (ev) => {
    if (ev.key === ' ' || ev.key === 'Enter' || ev.key === 'Spacebar') {
      ev.preventDefault()
      ev.stopPropagation()
    }
  })
  btn.addEventListener('keyup', (ev) => {
    if (ev.key === ' ' || ev.key === 'Enter' || ev.key === 'Spacebar') ev.preventDefault()
  })
  let timer: ReturnType<typeof setTimeout> | undefined
  let held = false
  const stop = () => {
    if (timer !== undefined) clearTimeout(timer)
    timer = undefined
    delete btn.dataset.holding
  }
  btn.addEventListener('pointerdown', (ev) => {
    if (!ev.isTrusted || ev.button !== 0 || !ready()) return
    held = false
    btn.dataset.holding = 'true'
    timer = setTimeout(() => {
      timer = undefined
      delete btn.dataset.holding
      if (!ready()) return
      held = true
      fire('hold')
    }, HOLD_MS)
  })
  for (const end of ['pointerup', 'pointerleave', 'pointercancel'] as const) btn.addEventListener(end, stop)
  btn.addEventListener('click', (ev) => {
    // The click that ends a completed hold is that hold, not a second press.
    if (held) {
      held = false
      return
    }
    if (!pointerMade(ev) || !ready()) return
    fire('click')
  })
}

