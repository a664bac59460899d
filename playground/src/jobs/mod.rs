//! A local MCP job server (SPEC-approval): job tools that return plans
//! instead of acting, the server side of YEA's approval contract, and a
//! scripted MCP client that calls it over the child's stdio.
//!
//! Within the person's signed policy a plan runs and the call returns a
//! receipt. Outside it, a client that can show forms gets the in-chat
//! approval form (the person types the plan's phrase); any other client,
//! or a plan that needs approval outside the chat, gets an approval code
//! and the line "ask the user to run `yea approve <code>`". The person runs `parley approve
//! <code>` with Parley Custody, which reviews the plan, asks for the typed
//! phrase, signs the consent with the principal key and writes it into the
//! store; the same call again then runs once.
//!
//! The plan hash, the job code and the stored consent's check are
//! parley-core's (`parley_core::job`), shared with custody's review.
//!
//! * [`policy`]: the policy decision from a signed policy grant.
//! * [`approval_code`]: the approval code and the line for the person.
//! * [`form`]: the in-chat approval form and the check of its answer.
//! * [`request_state`]: the signed state that goes round the client.
//! * [`undo`]: undo of a receipt within its window.
//! * [`store`]: the file store (consume once, the ledger, receipts, undo claims).
//! * [`token_file`]: the ledger's lock files, held by a token.
//! * [`server`]: the refund desk's two job tools and the call flow.
//! * [`mcp`]: the server on the official MCP SDK (`rmcp`, stdio), and the
//!   scripted client.

pub mod approval_code;
pub mod command;
pub mod form;
pub mod mcp;
pub mod policy;
pub mod request_state;
pub mod server;
pub mod store;
pub mod token_file;
pub mod undo;
