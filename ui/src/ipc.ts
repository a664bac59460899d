// The custody service's calls and events, typed. Every call goes through the
// UI process's one Tauri command, `call` (src-tauri/src/bridge.rs), to the
// service (docs/ui-channel.md), which checks it against this window's label;
// only `window_close` stays in the UI process.
// Every call has a timeout here too: a window never waits forever.

import { invoke } from '@tauri-apps/api/core'
import { listen, type UnlistenFn } from '@tauri-apps/api/event'
import { getCurrentWindow } from '@tauri-apps/api/window'
import { DECIDE_WAIT_MS } from './custody-constants'

export type ReviewKind = 'consent' | 'grant'

export interface Requester {
  user: string
  uid: number
  pid: number | null
  exe: string | null
  /** The process chain in one line (`claude (4242) ← bash (4100) ← kitty (3900)`), display-safe; may be absent or empty. */
  chain_line?: string
}
export interface AgentView {
  key: string
  short: string
  /** Four words from a hash of the whole key, the same wherever the key is shown. */
  phrase: string
  label: string | null
  /** The one name every view shows: the human's label, else the four words (custody computes it). */
  name?: string
  known: boolean
}
export interface EffectView {
  op: string
  line: string
}
export interface CaveatView {
  json: unknown
  words: string
}
export interface Money {
  amount: number
  currency: string
}
/** One measure of a YEA proposal's `uses`, in words (display-safe). */
export interface UseView {
  measure: string
  words: string
  money: Money | null
}
/** The protocol a proposal was read under. */
export type Dialect = 'parley1' | 'yea1'
export interface Review {
  kind: ReviewKind
  service: string
  capability: string
  /** Parley: the cost or `free`; YEA: every measure of `uses` in one line. */
  cost: string
  cost_money: Money | null
  dialect: Dialect
  /** YEA: every measure the proposal reports, in canonical order. */
  uses: UseView[]
  risk: string
  undo: string
  irreversible: boolean
  effects: EffectView[]
  expires: number
  requester: Requester
  agent: AgentView
  their_words: string
  summary_differs: boolean
  hash: string
  hash_short: string
  principal: string
  principal_label: string | null
  principal_short: string
  caveats: CaveatView[]
  preview: string
  warnings: string[]
  needs_second_confirmation: boolean
  /** What custody's audit log finds unusual; each reason is also in `warnings`. */
  unusual?: { rule: string; reason: string }[]
  /** What this agent has done so far (`words` is display-safe). */
  activity?: { words: string } | null
  /** A YEA job approval (job.ts): the tool, its input, the phrase to type. */
  job?: JobView
  /** Why custody asks (consent): the grant it issued to this agent that the
   *  proposal falls outside of, and by how much (custody/src/review/why_asked.rs). */
  why?: { rule: string; words: string } | null
}

/** What a job review adds (custody's `review::JobView`); display-safe. */
export interface JobView {
  tool: string
  /** The input in Lens's lean notation, one line per field. */
  input: string[]
  /** The phrase the human types to approve. */
  phrase: string
  plan_hash: string
}
export interface StepUpNeed {
  required: boolean
  words: string
}
export interface PendingView {
  id: string
  review: Review
  step_up: StepUpNeed
  received_at: number
  closes_at: number
}
export interface KeyView {
  public: string
  short: string
  label: string
  created_at: number
  source: 'created' | 'imported'
  status: 'present' | 'missing'
}
export interface SocketStatus {
  path: string
  listening: boolean
  error: string | null
  unreachable_for_agents: string | null
}
export interface StatusView {
  running: boolean
  error: string | null
  warnings: string[]
  socket: SocketStatus | null
  data_dir: string | null
  store: string | null
  keys: KeyView[]
  keys_error: string | null
  pending: number
  notifications: { available: boolean | null; message: string | null }
  /** Whether a tray host shows custody's icon (absent from an older service). */
  tray?: { available: boolean; message: string | null }
  restart_needed: string[]
  version: string
  approve_delay_ms: number
  autostart: AutostartView
  /** `locked` or `asleep` while nothing may be approved (custody/src/session.rs). */
  session?: 'locked' | 'asleep' | null
}
/** What letting another OS user's agents connect changes (custody/src/agent_access.rs). */
export interface AgentUserPlanView {
  user: string
  group: string
  steps: string[]
  socket: string
}
/** Start at login (the service's autostart, ported from the former src-tauri/src/autostart.rs): the XDG autostart entry. */
export interface AutostartView {
  enabled: boolean
  offered: boolean
  entry: string
  error: string | null
}
/** Approve for a while, as chosen: at most `amount` (minor units of the order's currency) more, for `minutes`. */
export interface ForAWhile {
  amount: number
  minutes: number
}
/** What custody offers beside Approve (custody/src/engine/for_a_while.rs OfferView). */
export interface ForAWhileOffer {
  order: { amount: number; currency: string }
  ceiling: number
  amounts: number[]
  minutes: number[]
  service: string
  capability: string
  agent_name: string
  amount_words: string[]
  /** Whether approving for a while asks for the password (even where the consent alone would not). */
  asks_password: boolean
}
export interface DecisionView {
  outcome: 'approved' | 'issued' | 'denied' | 'expired' | 'cancelled'
  message: string
}
export interface KnownAgent {
  key: string
  short: string
  phrase: string
  label: string | null
  /** The one name shown for it (custody's: the label, else the four words). */
  name?: string
  last_seen: number | null
  waiting: boolean
}
/** A paused agent: its requests are refused without a prompt (display-safe). */
export interface PauseView {
  agent: string
  short: string
  phrase: string
  label: string | null
  /** The one name shown for it (custody's: the label, else the four words). */
  name?: string
  /** Until when (unix seconds); null: until resumed. */
  until: number | null
  reason: string
  at: number
}
export interface PausesView {
  paused: PauseView[]
  /** Every agent the human has dealt with, to pause. */
  agents: KnownAgent[]
  now: number
}
export interface GrantContext {
  principals: KeyView[]
  known_agents: KnownAgent[]
  max_grant_lifetime_secs: number
  request: PendingView | null
}
/** How the human pressed Approve or Issue (the backend refuses an approval without one). */
export type Gesture = 'click' | 'hold'

export interface GrantPreviewView {
  caveats: unknown[]
  caveat_words: string[]
  preview: string
  warnings: string[]
  widenings: string[]
  principal: string
  principal_label: string | null
  principal_short: string
}
export interface IssuedView {
  sent_to_agent: boolean
  token: string | null
  caveats: unknown[]
  caveat_words: string[]
  preview: string
  warnings: string[]
}
export type EventKind =
  | 'grant_issued'
  | 'grant_denied'
  | 'consent_approved'
  | 'consent_denied'
  | 'request_rejected'
  | 'request_expired'
  | 'request_cancelled'
  | 'key_created'
  | 'key_imported'
  | 'key_deleted'
  | 'rejections_summarized'
  | 'retention_changed'
  | 'cancellations_summarized'
  | 'audit_compacted'
  | 'step_up_failed'
  | 'agent_paused'
  | 'agent_resumed'
  | 'agent_labelled'
  | 'settings_loosened'
  | 'custody_frozen'
  | 'custody_unfrozen'
  | 'grant_revoked'
  | 'short_grant_refused'
/** Whether custody is frozen, and what an unfreeze ended (custody/src/desktop/calls/freeze.rs). */
export interface FreezeView {
  frozen: boolean
  since: number | null
  reason: string | null
  refused: number
  refused_rows: { at: number; peer_uid: number | null; agent: string | null; service: string | null }[]
  denied: number
}

/** One audit row: every stored column under its name (text display-safe),
 *  with `undo`, `cost` and `span` in words or pairs, and what custody works
 *  out for the human (custody/src/desktop/views.rs). */
export interface EventView {
  seq: number
  at: number
  kind: EventKind
  peer_uid: number | null
  peer_pid: number | null
  peer_exe: string | null
  agent: string | null
  agent_short: string | null
  agent_label: string | null
  /** The one name shown for the agent (custody's: the label, else the four words). */
  agent_name?: string | null
  /** Its four words. */
  agent_phrase?: string | null
  service: string | null
  capability: string | null
  hash: string | null
  cost: string | null
  risk: string | null
  undo: string | null
  expires: number | null
  token_id: string | null
  caveats: string | null
  caveat_words: string[]
  preview: string | null
  reason: string | null
  principal: string | null
  /** How a signed decision was confirmed: click, hold or terminal, then +second, +os-auth; or
   *  `custody, unasked: …` for custody's own revocation of an approve-for-a-while grant. */
  confirmed_by: string | null
  /** Fields an agent sent oversized, cut, with their original sizes. */
  cut: string | null
  /** Requests a summary row stands for. */
  count: number | null
  span: [number, number] | null
  /** The requester's process chain as stored (JSON text, display-safe). */
  peer_chain?: string | null
  /** Only on an approve-for-a-while grant's row: the minutes the human chose. Set by custody's
   *  engine alone: the one mark of a short grant (never its reason, which an agent may write). */
  for_a_while?: number | null
  /** The row's place in the hash chain. */
  prev?: string
  row_hash?: string
}
export interface AuditFilter {
  kinds?: string[]
  agent?: string | null
  service?: string | null
  since?: number | null
  until?: number | null
  limit?: number | null
}
export interface AuditView {
  events: EventView[]
  truncated: boolean
  live: EventView[]
  /** Ids of the grants custody revoked (absent from older services). */
  revoked?: string[]
  verify: { rows: number; ok: boolean; first_bad_seq: number | null; problem: string | null }
  now: number
}
/** A settings change that loosens custody: saving it asks for OS authentication first. */
export interface Loosening {
  field: string
  /** The change in words ("turn OS authentication off for approvals"). */
  words: string
}

export interface Settings {
  agents_group: string | null
  extra_users: string[]
  socket_path: string | null
  max_consent_horizon_secs: number
  max_grant_lifetime_secs: number
  queue_size: number
  rate_per_minute: number
  agent_labels: Record<string, string>
  step_up: StepUpPolicy
  autostart_offered: boolean
  /** End approve-for-a-while grants when the session locks (issue 30; default on). */
  end_short_grants_on_lock?: boolean
  /** When notifications leave out what is asked (custody/src/desktop/settings.rs). */
  hide_notification_details?: 'when_locked' | 'always'
}
/** Which approvals need OS authentication (custody/src/stepup.rs). */
export type StepUpPolicy =
  | { rule: 'committing' }
  | { rule: 'above'; amount: number; currency: string }
  | { rule: 'never' }
export interface SettingsView {
  settings: Settings
  autostart: AutostartView
  running: Settings | null
  restart_needed: string[]
  data_dir: string | null
  socket: SocketStatus | null
  policy: { own_uid: number; agents_group: string | null; extra_uids: number[] } | null
  /** Custody runs as root: OS authentication protects nothing (the service's words). */
  step_up_root?: string | null
  /** The OS prompt cannot name the decision for custody's user (the service's sentence). */
  prompt_unnamed?: string | null
}

/** How long a command may take before the window says so (the backend has its own limits). */
export const CALL_TIMEOUT_MS = 90_000

/**
 * The calls that may wait for OS authentication (a decision, or a change
 * custody asks the password for): the window waits for them as long as
 * custody can take (DECIDE_WAIT_MS, longer than polkit's limit plus custody's
 * margin), so a decision custody carried out never reads "no answer".
 */
export const WAITS_FOR_OS_AUTHENTICATION: ReadonlySet<string> = new Set([
  'review_decide',
  'review_deny_and_pause',
  'review_deny_alike',
  'grant_issue',
  'settings_save',
  'agent_resume',
  'custody_unfreeze',
  'grant_revoke',
  'agent_user_apply',
  'prompt_owner_apply',
  'key_create',
  'key_import',
  'key_delete',
  'app_restart',
])

/** How long the window waits for call `cmd`. */
export function callTimeoutMs(cmd: string): number {
  return WAITS_FOR_OS_AUTHENTICATION.has(cmd) ? DECIDE_WAIT_MS : CALL_TIMEOUT_MS
}

/**
 * Why custody (or this UI's process) refused a call: a code a window acts on
 * (custody's ErrorCode: `bad_request`, `not_permitted`, `gone`, `busy`,
 * `timeout`, `not_running`, `refused`, `not_authenticated`) and the sentence for the human.
 */
export class CallError extends Error {
  constructor(
    readonly code: string,
    message: string,
  ) {
    super(message)
    this.name = 'CallError'
  }
}

/** The code of a refused call, or null for anything else thrown. */
export function errorCode(e: unknown): string | null {
  return e instanceof CallError ? e.code : null
}

/** Calls custody (or, for `window_close`, the UI process), with a timeout; a refusal is a CallError with custody's code and sentence. */
export async function call<T>(cmd: string, args: Record<string, unknown> = {}): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined
  const wait = callTimeoutMs(cmd)
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new CallError('timeout', `No answer from custody within ${wait / 1000} s.`)), wait)
  })
  try {
    const sent = cmd === 'window_close' ? invoke<T>('window_close') : invoke<T>('call', { name: cmd, args })
    return await Promise.race([sent, timeout])
  } catch (e) {
    if (e instanceof CallError) throw e
    const refusal = e as { code?: unknown; message?: unknown } | null
    if (refusal && typeof refusal === 'object' && typeof refusal.code === 'string' && typeof refusal.message === 'string') {
      throw new CallError(refusal.code, refusal.message)
    }
    throw new CallError('refused', errorText(e))
  } finally {
    clearTimeout(timer)
  }
}

/** A thrown value as one sentence. */
export function errorText(e: unknown): string {
  if (e instanceof Error) return e.message
  if (typeof e === 'string') return e
  const refusal = e as { message?: unknown } | null
  if (refusal && typeof refusal === 'object' && typeof refusal.message === 'string') return refusal.message
  try {
    return JSON.stringify(e)
  } catch {
    return String(e)
  }
}

/** Listens to a backend event; returns the unlisten function (no-op if listening failed). */
export async function on<T>(event: string, f: (payload: T) => void): Promise<UnlistenFn> {
  try {
    return await listen<T>(event, (e) => f(e.payload))
  } catch {
    return () => {}
  }
}

/** Calls `f` when this window gains (true) or loses (false) the focus, as
 *  the app's window reports it: not the document's own focus, which Tab
 *  moves out to the webview's chrome while the window stays in front. */
export async function onWindowFocus(f: (focused: boolean) => void): Promise<UnlistenFn> {
  try {
    return await getCurrentWindow().onFocusChanged((e) => f(e.payload))
  } catch {
    return () => {}
  }
}

export const api = {
  status: () => call<StatusView>('status'),
  pendingList: () => call<PendingView[]>('pending_list'),
  reviewGet: (id: string) => call<PendingView | null>('review_get', { id }),
  reviewDecide: (id: string, approve: boolean, confirmed: boolean, gesture: Gesture | null, reason: string | null, typed: string | null = null, forAWhile: ForAWhile | null = null) =>
    // `typed` only for a job (job.ts), `for_a_while` only when chosen
    // (for_a_while.ts): every other decision is sent as before.
    call<DecisionView>('review_decide', {
      id,
      approve,
      confirmed,
      gesture,
      reason,
      ...(typed === null ? {} : { typed }),
      ...(forAWhile === null ? {} : { for_a_while: forAWhile }),
    }),
  /** What custody offers beside Approve for `id` (approve for a while), or null. */
  reviewForAWhile: (id: string) => call<ForAWhileOffer | null>('review_for_a_while', { id }),
  /** Denies request `id` and pauses its agent for 1 hour (review windows only). */
  reviewDenyAndPause: (id: string) => call<DecisionView>('review_deny_and_pause', { id }),
  /** The requests alike to `id` waiting now (same agent, user, service, capability). */
  reviewAlike: (id: string) => call<PendingView[]>('review_alike', { id }),
  /** Denies `id` and every request alike to it (from its own review window). */
  reviewDenyAlike: (id: string, reason: string | null) => call<DecisionView>('review_deny_alike', { id, reason }),
  agentPauses: () => call<PausesView>('agent_pauses'),
  /** `secs` null: until resumed. */
  agentPause: (agent: string, secs: number | null) => call<PausesView>('agent_pause', { agent, secs }),
  agentResume: (agent: string) => call<PausesView>('agent_resume', { agent }),
  /** Revokes a live grant after OS authentication (signs and publishes a revocation). */
  grantRevoke: (grant: string, reason: string | null) => call<{ grant: string; files: string[]; note: string }>('grant_revoke', { grant, reason }),
  /** Whether custody is frozen ("Stop all agents"). */
  custodyFrozen: () => call<FreezeView>('custody_frozen'),
  /** Stops all agents (asks nothing). */
  custodyFreeze: () => call<FreezeView>('custody_freeze'),
  /** Ends the freeze after OS authentication; lists what was refused meanwhile. */
  custodyUnfreeze: () => call<FreezeView>('custody_unfreeze'),
  openWindow: (kind: string, id: string | null = null, agent: string | null = null) =>
    call<void>('open_window', { kind, id, agent }),
  windowClose: () => call<void>('window_close'),
  grantContext: (request: string | null) => call<GrantContext>('grant_context', { request }),
  grantPreview: (a: { agent: string; caveats: unknown[]; principal: string | null; request: string | null }) =>
    call<GrantPreviewView>('grant_preview', a),
  grantIssue: (a: {
    agent: string
    caveats: unknown[]
    shown: unknown[]
    widenings: string[]
    gesture: Gesture
    principal: string | null
    note: string | null
    request: string | null
  }) => call<IssuedView>('grant_issue', a),
  auditQuery: (filter: AuditFilter) => call<AuditView>('audit_query', { filter }),
  auditExport: (format: 'jsonl' | 'csv', filter: AuditFilter) =>
    call<{ path: string; rows: number }>('audit_export', { format, filter }),
  keysList: () => call<{ store: string; keys: KeyView[] }>('keys_list'),
  keyCreate: (label: string) => call<KeyView>('key_create', { label }),
  keyImport: (path: string, label: string) => call<KeyView>('key_import', { path, label }),
  keyShred: (path: string) => call<void>('key_shred', { path }),
  keyDelete: (pub: string, confirm: string) => call<void>('key_delete', { public: pub, confirm }),
  settingsGet: () => call<SettingsView>('settings_get'),
  settingsSave: (settings: Settings) => call<SettingsView>('settings_save', { settings }),
  /** Which of these changes would ask for OS authentication (nothing is saved). */
  settingsLoosenings: (settings: Settings) => call<Loosening[]>('settings_loosenings', { settings }),
  agentLabelSet: (agent: string, label: string | null) =>
    call<void>('agent_label_set', { agent, label }),
  appRestart: () => call<void>('app_restart'),
  /** Quits custody (the tray's Quit, for desktops with no tray host). */
  appQuit: () => call<void>('app_quit'),
  autostartSet: (enabled: boolean) => call<AutostartView>('autostart_set', { enabled }),
  agentUserPlan: (user: string) => call<AgentUserPlanView>('agent_user_plan', { user }),
  agentUserApply: (user: string, shown: string[]) => call<SettingsView>('agent_user_apply', { user, shown }),
  promptOwnerApply: () => call<SettingsView>('prompt_owner_apply'),
}

/**
 * An agent's one name as custody computes it (the human's label, else its
 * four words), never its key: `name` from custody, with the same rule as a
 * fallback for views built before it was sent.
 */
export function agentName(a: { name?: string | null; label?: string | null; phrase?: string | null; short?: string | null }): string {
  return a.name || a.label || a.phrase || a.short || 'an unknown agent'
}
