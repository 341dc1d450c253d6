//! `agentlog-replay`: audit, replay, verify, rebuild, export/import, stats.
//!
//! One subcommand per module; `main` only parses arguments and dispatches.

mod conversation_parse;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// Command line of `agentlog-replay`.
#[derive(Debug, Parser)]
#[command(name = "agentlog-replay", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
enum Command {
    /// Parse a topic's messages (JSON on stdin) into LobeHub's contextTree, flatList and
    /// messageMap (JSON on stdout).
    ConversationParse(conversation_parse::Args),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::ConversationParse(args) => conversation_parse::run(&args),
    };
    match result {
        Ok(code) => code,
        Err(err) => {
            eprintln!("error: {err:#}");
            ExitCode::FAILURE
        }
    }
}
