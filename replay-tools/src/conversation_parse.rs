//! `agentlog-replay conversation-parse`: stdin messages → stdout `{contextTree, flatList,
//! messageMap}`, diagnostics on stderr. Bad input JSON exits with code 2.

use std::io::{self, BufWriter, Read, Write};
use std::process::ExitCode;

use agentlog_conversation_flow as conversation;
use anyhow::Context;

/// Exit code for input that is not a parseable message document.
const BAD_INPUT: u8 = 2;

/// Arguments of `conversation-parse`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Print diagnostics to stderr as one JSON object per line instead of prose.
    #[arg(long)]
    pub diagnostics_json: bool,
}

/// Read the document from stdin, parse it, write the result to stdout.
pub fn run(args: &Args) -> anyhow::Result<ExitCode> {
    let mut input = Vec::new();
    io::stdin().lock().read_to_end(&mut input).context("reading stdin")?;
    let doc: conversation::Value = match serde_json::from_slice(&input) {
        Ok(doc) => doc,
        Err(err) => {
            eprintln!("error: stdin is not valid JSON: {err}");
            return Ok(ExitCode::from(BAD_INPUT));
        }
    };
    let result = match conversation::parse_document(&doc) {
        Ok(result) => result,
        Err(err) => {
            eprintln!("error: {err}");
            return Ok(ExitCode::from(BAD_INPUT));
        }
    };

    let stdout = io::stdout();
    let mut out = BufWriter::new(stdout.lock());
    result.write_json(&mut out).context("writing stdout")?;
    out.write_all(b"\n").context("writing stdout")?;
    out.flush().context("writing stdout")?;

    if !result.diagnostics.is_empty() {
        let stderr = io::stderr();
        let mut err = stderr.lock();
        if !args.diagnostics_json {
            writeln!(err, "warning: {} input problem(s) repaired while parsing:", result.diagnostics.len())?;
        }
        for d in &result.diagnostics {
            let line = serde_json::to_string(d).context("encoding a diagnostic")?;
            if args.diagnostics_json {
                writeln!(err, "{line}")?;
            } else {
                writeln!(err, "warning: {line}")?;
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}
