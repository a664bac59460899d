// Building the DOM safely. Every piece of text goes in as a text node
// (textContent), never as HTML: no HTML-parsing DOM API is used anywhere
// in this UI (tests/ui.test.mjs checks the sources).
// Text is also passed through `visible`, which turns characters that can hide
// or reorder text into visible escapes, as the engine does (custody/src/display.rs):
// the review is display-safe already, but audit rows are stored raw, and
// defence in depth costs nothing here.

/** The longest field shown; the rest is summarized visibly (same as the engine). */
export const MAX_FIELD_CHARS = 4096

/** Whether code point `c` must be shown as an escape (mirror of display::is_hidden). */
export function isHidden(c: number): boolean {
  return (
    c <= 0x1f ||
    (c >= 0x7f && c <= 0x9f) ||
    c === 0xad ||
    c === 0x34f ||
    c === 0x61c ||
    c === 0x115f ||
    c === 0x1160 ||
    c === 0x17b4 ||
    c === 0x17b5 ||
    (c >= 0x180b && c <= 0x180f) ||
    (c >= 0x200b && c <= 0x200f) ||
    (c >= 0x2028 && c <= 0x202e) ||
    (c >= 0x2060 && c <= 0x206f) ||
    c === 0x3164 ||
    (c >= 0xfe00 && c <= 0xfe0f) ||
    c === 0xfeff ||
    c === 0xffa0 ||
    (c >= 0xfff9 && c <= 0xfffb) ||
    (c >= 0x1d173 && c <= 0x1d17a) ||
    (c >= 0xe0000 && c <= 0xe0fff)
  )
}

/** Untrusted text made safe to display: hidden characters as `\u{…}`, long text cut visibly. */
export function visible(s: string, max = MAX_FIELD_CHARS): string {
  let out = ''
  let shown = 0
  const chars = Array.from(s)
  for (const ch of chars) {
    if (shown >= max) {
      out += `… (${chars.length - shown} more characters not shown)`
      return out
    }
    shown++
    const c = ch.codePointAt(0) ?? 0
    // Lone surrogates are invisible garbage too.
    if (isHidden(c) || (c >= 0xd800 && c <= 0xdfff)) {
      out += `\\u{${c.toString(16)}}`
    } else {
      out += ch
    }
  }
  return out
}

type Child = Node | string | null | undefined | false
type Props = {
  class?: string
  id?: string
  title?: string
  testid?: string
  attrs?: Record<string, string>
  on?: Partial<{ [K in keyof HTMLElementEventMap]: (ev: HTMLElementEventMap[K]) => void }>
}

/** An element with text children as text nodes (made visible) and element children as given. */
export function h<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  props: Props | null = null,
  ...children: Child[]
): HTMLElementTagNameMap[K] {
  const el = document.createElement(tag)
  if (props) {
    if (props.class) el.className = props.class
    if (props.id) el.id = props.id
    if (props.title) el.title = visible(props.title)
    if (props.testid) el.dataset.testid = props.testid
    for (const [k, v] of Object.entries(props.attrs ?? {})) {
      // Never event-handler attributes, never URLs: only plain attributes.
      if (/^on/i.test(k) || /^(href|src|srcdoc|action|formaction|style)$/i.test(k)) {
        throw new Error(`refused attribute ${k}`)
      }
      el.setAttribute(k, v)
    }
    for (const [ev, fn] of Object.entries(props.on ?? {})) {
      el.addEventListener(ev, fn as EventListener)
    }
  }
  append(el, ...children)
  return el
}

/** Appends children: strings become (visible) text nodes. */
export function append(el: Node, ...children: Child[]): void {
  for (const c of children) {
    if (c === null || c === undefined || c === false) continue
    el.appendChild(typeof c === 'string' ? document.createTextNode(visible(c)) : c)
  }
}

/** Replaces an element's content. */
export function replace(el: Node, ...children: Child[]): void {
  while (el.firstChild) el.removeChild(el.firstChild)
  append(el, ...children)
}

/** Sets an element's text (visible). */
export function setText(el: Node, s: string): void {
  el.textContent = visible(s)
}

/** The element with this id (throws if the page lacks it: a build mistake). */
export function byId<T extends HTMLElement = HTMLElement>(id: string): T {
  const el = document.getElementById(id)
  if (!el) throw new Error(`missing #${id}`)
  return el as T
}

/** A labelled row of a definition list: `<dt>label</dt><dd>value</dd>`. */
export function row(label: string, value: Child, testid?: string, cls?: string): HTMLElement[] {
  return [h('dt', null, label), h('dd', { testid, class: cls }, value)]
}

/** Copies text to the clipboard (navigator.clipboard, else a selected textarea). */
export async function copyText(text: string): Promise<boolean> {
  try {
    if (navigator.clipboard?.writeText) {
      await navigator.clipboard.writeText(text)
      return true
    }
  } catch {
    /* fall through to the selection fallback */
  }
  const ta = h('textarea', { class: 'offscreen', attrs: { readonly: '' } })
  ta.value = text
  document.body.appendChild(ta)
  ta.select()
  let ok = false
  try {
    ok = document.execCommand('copy')
  } catch {
    ok = false
  }
  ta.remove()
  return ok
}

/** A message line in a status area (kind: info, ok, warn, error). */
export function say(el: HTMLElement, kind: 'info' | 'ok' | 'warn' | 'error', text: string): void {
  el.className = `msg msg-${kind}`
  el.hidden = !text
  setText(el, text)
}
