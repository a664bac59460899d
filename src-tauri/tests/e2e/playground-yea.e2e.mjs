// The playground's whole scenario through the real app, in YEA v1: the same
// test as playground.e2e.mjs (see there), with the services and the agent
// started with `--dialect yea` (`uses` instead of `cost`, each/total limits).
process.env.PLAYGROUND_DIALECT = 'yea'
await import('./playground.e2e.mjs')
