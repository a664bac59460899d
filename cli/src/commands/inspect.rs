//! `parley inspect`: a grant's chain in plain words.

use super::Report;
use crate::cli::InspectArgs;
use crate::error::CliError;
use parley_core::grant::UnverifiedGrant;
use parley_core::lens;
use serde::Serialize;
use serde_json::Value;
use std::fmt;

#[derive(Serialize)]
struct BlockView {
    index: usize,
    id: String,
    /// Who signed this block: the issuer for the root, else the previous holder.
    signed_by: String,
    holder: String,
    iat: i64,
    caveats: Vec<Value>,
    caveats_in_words: Vec<String>,
    payload: Value,
    sig: String,
}

#[derive(Serialize)]
struct Inspection {
    id: String,
    issuer: String,
    holder: String,
    expires: Option<i64>,
    /// Signatures and `prev` links check out (says nothing about trust).
    chain_valid: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    chain_error: Option<String>,
    blocks: Vec<BlockView>,
}

impl fmt::Display for Inspection {
    /// Every string here came from the token (anyone's text): made
    /// [`super::visible`] before it reaches the terminal.
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        let v = super::visible;
        writeln!(f, "grant {}", v(&self.id))?;
        writeln!(f, "issuer (principal): {}", v(&self.issuer))?;
        writeln!(f, "holder: {}", v(&self.holder))?;
        match self.expires {
            Some(t) => writeln!(f, "expires: {}", lens::time(t))?,
            None => writeln!(f, "expires: never (no exp caveat)")?,
        }
        match &self.chain_error {
            None => writeln!(
                f,
                "signatures: valid chain of {} block(s); trust is up to the service",
                self.blocks.len()
            )?,
            Some(e) => writeln!(f, "signatures: INVALID ({})", v(e))?,
        }
        for b in &self.blocks {
            let what = if b.index == 0 { "root" } else { "delegation" };
            writeln!(
                f,
                "\n[{}] {what} {} issued {}",
                b.index,
                v(&b.id),
                lens::time(b.iat)
            )?;
            writeln!(f, "  signed by {}", v(&b.signed_by))?;
            writeln!(f, "  to {}", v(&b.holder))?;
            if b.caveats_in_words.is_empty() {
                writeln!(f, "  no caveats: anything the blocks above allow")?;
            }
            for w in &b.caveats_in_words {
                writeln!(f, "  - {}", v(w))?;
            }
        }
        Ok(())
    }
}

pub fn run(a: InspectArgs) -> Result<Report, CliError> {
    let token = super::token_arg(&a.token)?;
    let g = UnverifiedGrant::decode(&token).map_err(CliError::bad)?;
    let chain = g.verify_chain();
    let blocks = g
        .blocks()
        .iter()
        .enumerate()
        .map(|(i, b)| BlockView {
            index: i,
            id: b.id(),
            signed_by: b
                .issuer()
                .map(str::to_string)
                .unwrap_or_else(|| g.blocks()[i - 1].subject().to_string()),
            holder: b.subject().to_string(),
            iat: b.issued_at(),
            caveats: b.caveats().iter().map(|c| c.to_value()).collect(),
            caveats_in_words: b.caveats().iter().map(|c| c.describe()).collect(),
            payload: Value::Object(b.payload().clone()),
            sig: b.signature().to_string(),
        })
        .collect();
    let view = Inspection {
        id: g.id(),
        issuer: g.issuer().to_string(),
        holder: g.holder().to_string(),
        expires: g.expiry(),
        chain_valid: chain.is_ok(),
        chain_error: chain.err().map(|e| e.to_string()),
        blocks,
    };
    let exit = if view.chain_valid { 0 } else { 1 };
    Ok(Report::new(&view, exit))
}
