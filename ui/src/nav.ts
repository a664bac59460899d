// The main window's views: home, the human's own grant form, the audit log
// and settings are pages of one window (`main`). Moving between them asks
// custody to open the view, as the tray and the notifications do, so the
// window's title and its approve delay follow the page (custody re-arms the
// delay when the new page has loaded).

import { api, errorText } from './ipc'
import { h } from './dom'

/** A view of the main window. */
export type View = 'home' | 'grant' | 'audit' | 'settings'

const VIEWS: { view: View; text: string; testid: string; kind: string }[] = [
  { view: 'home', text: 'Home', testid: 'open-home', kind: 'main' },
  { view: 'grant', text: 'Issue a grant', testid: 'open-grant', kind: 'grant' },
  { view: 'audit', text: 'Audit log', testid: 'open-audit', kind: 'audit' },
  { view: 'settings', text: 'Settings', testid: 'open-settings', kind: 'settings' },
]

/** Shows `view` in the main window (custody navigates it). */
export function showView(view: View): Promise<void> {
  const kind = VIEWS.find((v) => v.view === view)?.kind ?? 'main'
  return api.openWindow(kind)
}

/** The main window's navigation, with `current` marked (aria-current). */
export function mainNav(current: View, onError: (message: string) => void): HTMLElement {
  const items = VIEWS.map(({ view, text, testid }) => {
    const here = view === current
    const b = h('button', { class: here ? 'btn nav-current' : 'btn', testid, attrs: { type: 'button' } }, text)
    if (here) b.setAttribute('aria-current', 'page')
    b.addEventListener('click', () => {
      if (!here) void showView(view).catch((e) => onError(errorText(e)))
    })
    return b
  })
  return h('nav', { class: 'nav', attrs: { 'aria-label': 'Parley Custody' } }, ...items)
}
