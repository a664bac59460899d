// Fixture data shaped like the backend's views (the service's calls, custody/src/desktop/calls.rs).

import { readFileSync } from 'node:fs'

export const now = () => Math.floor(Date.now() / 1000)

/** Custody's APPROVE_DELAY in ms, read from the file generated from it (ui/src/custody-constants.ts). */
export const APPROVE_DELAY_MS = Number(
  /^export const APPROVE_DELAY_MS = (\d+)$/m.exec(readFileSync(new URL('../src/custody-constants.ts', import.meta.url), 'utf8'))[1],
)

export const AGENT = 'ed25519:gTl3Dqh9F19Wo1Rmw0x-zMuNipG07jeiXfYPW4_Js5Q'
export const PRINCIPAL = 'ed25519:iojj3XQJ8ZX9UtstPLpdcspnCb8dlBIb83SIAbQPb1w'
export const HASH = 'U3jkeF8dHXVIin2XSxui9IcSRxzU_q7H1WOAHqETJpc'

export function consent(over = {}) {
  const t = now()
  const review = {
    kind: 'consent',
    service: 'shop.example',
    capability: 'shop.order',
    cost: '71.36 USD',
    cost_money: { amount: 7136, currency: 'USD' },
    dialect: 'parley1',
    uses: [],
    risk: 'medium',
    undo: '30m',
    irreversible: false,
    effects: [
      { op: 'create', line: '+ create order' },
      { op: 'charge', line: '$ charge card ••42 — 71.36 USD' },
    ],
    expires: t + 600,
    requester: { user: 'agent', uid: 1001, pid: 4242, exe: '/usr/bin/python3.11', chain_line: 'python3.11 (4242) ← bash (4100) ← kitty (3900)' },
    agent: { key: AGENT, short: 'ed25519:gTl3Dqh9F1…', phrase: 'cactus orbit lemon frost', label: null, known: false },
    their_words: 'Order 3 items',
    summary_differs: false,
    hash: HASH,
    hash_short: HASH.slice(0, 12),
    principal: PRINCIPAL,
    caveats: [
      { json: { svc: ['shop.example'] }, words: 'only at the services "shop.example"' },
      { json: { verbs: ['COMMIT'] }, words: 'only the verbs "COMMIT"' },
    ],
    preview: '',
    warnings: [],
    needs_second_confirmation: false,
    activity: { words: 'this agent: 3 consents signed, 3 consents this week, 184.20 USD, 1 grant live now' },
    ...(over.review ?? {}),
  }
  const step_up = { required: true, words: 'After you approve, your system asks for your password (OS authentication) before anything is signed.' }
  return { id: 'q1', received_at: t, closes_at: t + 600, step_up, ...over, review }
}

export function grantRequest(over = {}) {
  const t = now()
  const caveats = over.caveats ?? [
    { svc: ['shop.example'] },
    { verbs: ['ASK', 'INTENT', 'COMMIT'] },
    { per: { max: 4000, currency: 'USD' } },
    { exp: t + 3600 },
  ]
  return consent({
    id: 'q7',
    review: {
      kind: 'grant',
      service: 'shop.example',
      capability: '',
      cost: '',
      cost_money: null,
      risk: '',
      undo: '',
      effects: [],
      hash: '',
      hash_short: '',
      their_words: 'weekly groceries',
      caveats: caveats.map((c) => ({ json: c, words: `words for ${Object.keys(c)[0]}` })),
      preview: 'may ASK, INTENT, COMMIT at shop.example, up to 40.00 USD each, until later',
      warnings: ['A per-action cap without a total (spend) can be dodged by splitting a purchase.'],
      expires: t + 3600,
      ...(over.review ?? {}),
    },
  })
}

export function status(over = {}) {
  return {
    running: true,
    error: null,
    warnings: [],
    socket: { path: '/run/user/1000/parley-custody/custody.sock', listening: true, error: null, unreachable_for_agents: null },
    data_dir: '/home/me/.local/share/parley-custody',
    store: 'the OS keychain (Secret Service), entries under "parley-custody"',
    keys: [{ public: PRINCIPAL, short: 'ed25519:iojj3XQJ8Z…', label: 'principal', created_at: now() - 86400, source: 'created', status: 'present' }],
    keys_error: null,
    pending: 0,
    notifications: { available: true, message: null },
    restart_needed: [],
    version: '0.1.0',
    approve_delay_ms: APPROVE_DELAY_MS,
    autostart: { enabled: false, offered: true, entry: '/home/me/.config/autostart/org.parley.custody.desktop', error: null },
    ...over,
  }
}

/**
 * Custody's settings as `settings_get` returns them (a SettingsView): the
 * defaults, with `settings` laid over the settings and `over` over the view.
 */
export function settingsView(settings = {}, over = {}) {
  return {
    settings: { agents_group: null, extra_users: [], socket_path: null, max_consent_horizon_secs: 86400, max_grant_lifetime_secs: 604800, queue_size: 64, rate_per_minute: 30, agent_labels: {}, step_up: { rule: 'committing' }, ...settings },
    running: null,
    restart_needed: [],
    data_dir: '/home/me/.local/share/parley-custody',
    socket: null,
    policy: { own_uid: 1000, agents_group: null, extra_uids: [] },
    autostart: { enabled: false, offered: true, entry: '/home/me/.config/autostart/org.parley.custody.desktop', error: null },
    ...over,
  }
}

/**
 * What a review window of `p` calls, answered: its review, no alike
 * requests, an approval that goes through (`message`), closing and
 * opening windows; `extra` adds or replaces calls.
 */
export function reviewFixtures(p, extra = {}, message = 'Approved: the consent was signed.') {
  return { review_get: p, review_alike: [], review_decide: { outcome: 'approved', message }, window_close: null, open_window: null, ...extra }
}

export function event(over = {}) {
  return {
    seq: 1,
    at: now() - 60,
    kind: 'consent_approved',
    peer_uid: 1001,
    peer_pid: 4242,
    peer_exe: '/usr/bin/python3.11',
    agent: AGENT,
    agent_short: 'ed25519:gTl3Dqh9F1…',
    agent_label: null,
    service: 'shop.example',
    capability: 'shop.order',
    hash: HASH,
    cost: '71.36 USD',
    risk: 'medium',
    undo: '30m',
    expires: now() + 540,
    token_id: 'tok1',
    caveats: null,
    caveat_words: [],
    preview: null,
    reason: null,
    principal: PRINCIPAL,
    ...over,
  }
}
