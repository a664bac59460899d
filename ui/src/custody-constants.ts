// Generated from the Rust constants by custody-client/src/ui_constants.rs (`ui_constants`): do not edit.
// Regenerate: cargo run -p parley-custody-client --example custody_constants > ui/src/custody-constants.ts

/** Currencies without minor units: amounts are whole units (parley-core's money::ZERO_DECIMAL). */
export const ZERO_DECIMAL: readonly string[] = ['JPY', 'KRW', 'VND', 'CLP', 'ISK', 'UGX', 'XAF', 'XOF']

/** How long a review window or grant form must have been in front, focused, before Approve or Issue counts (custody's APPROVE_DELAY). */
export const APPROVE_DELAY_MS = 1500

/** How long a window waits for a call that may ask for OS authentication: longer than custody can take on it (polkit's limit plus custody's margin; custody's DECIDE_WAIT). */
export const DECIDE_WAIT_MS = 210000

/** Each protocol verb in the words a person reads (custody's grant sentence uses the same). */
export const VERB_WORDS: Readonly<Record<string, string>> = {
  HELLO: 'connect',
  ASK: 'ask for offers',
  INTENT: 'state intents',
  COMMIT: 'commit (place orders, book, pay)',
  UNDO: 'undo',
  EXPAND: 'expand results',
}

/** The most characters of one field shown; the rest is summarized visibly (display::MAX_FIELD_CHARS). */
export const MAX_FIELD_CHARS = 4096
