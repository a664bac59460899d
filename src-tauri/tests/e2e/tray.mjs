// The tray icon as a tray host sees it: the service's StatusNotifierItem
// (ksni, on the session bus as org.kde.StatusNotifierItem-<pid>-<n>), read
// and clicked through its own D-Bus interfaces with gdbus, as a host would.

import { execFileSync } from 'node:child_process'

function gdbus(dest, path, method, ...args) {
  return execFileSync('gdbus', ['call', '--session', '--timeout', '3', '--dest', dest, '--object-path', path, '--method', method, '--', ...args], {
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'ignore'],
  })
}

/** The bus names of the tray items on this session bus (newest last). */
export function trayNames() {
  const out = execFileSync('dbus-send', ['--session', '--print-reply', '--dest=org.freedesktop.DBus', '/', 'org.freedesktop.DBus.ListNames'], { encoding: 'utf8' })
  return out.match(/org\.kde\.StatusNotifierItem-\d+-\d+/g) ?? []
}

/** A property of our tray item (`Title`, `Status`, `ToolTip`), as gdbus prints it; null if there is none. */
export function trayProp(name) {
  for (const dest of trayNames().reverse()) {
    try {
      if (!gdbus(dest, '/StatusNotifierItem', 'org.freedesktop.DBus.Properties.Get', 'org.kde.StatusNotifierItem', 'Id').includes("'parley-custody'")) continue
      return gdbus(dest, '/StatusNotifierItem', 'org.freedesktop.DBus.Properties.Get', 'org.kde.StatusNotifierItem', name)
    } catch {
      /* gone meanwhile */
    }
  }
  return null
}

/** The number of pending requests the tray shows (from its title), or null with no tray item. */
export function trayCount() {
  const t = trayProp('Title')
  if (t === null) return null
  const m = t.match(/Parley Custody(?: \((\d+)\))?/)
  return m ? Number(m[1] ?? 0) : null
}

let menuOwner = null
/** The tray menu's items as [id, label] (mnemonic underscores undone: `__` is `_`). */
export function trayItems() {
  const parse = (layout) => [...layout.matchAll(/<\((\d+), \{[^}]*'label': <'([^']*)'>/g)].map((m) => [Number(m[1]), m[2].replace(/__/g, '_')])
  for (const dest of [menuOwner, ...trayNames().reverse()].filter(Boolean)) {
    try {
      const items = parse(gdbus(dest, '/MenuBar', 'com.canonical.dbusmenu.GetLayout', '0', '-1', '[]'))
      if (items.some(([, l]) => l === 'Quit Parley Custody')) {
        menuOwner = dest
        return items
      }
    } catch {
      /* not ours, or gone */
    }
  }
  menuOwner = null
  return []
}

/** Clicks menu item `id` as a tray host does. */
export function trayClick(id) {
  if (!menuOwner) trayItems()
  gdbus(menuOwner, '/MenuBar', 'com.canonical.dbusmenu.Event', String(id), 'clicked', '<int32 0>', '0')
}
