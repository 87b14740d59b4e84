//! Test fixture for the SIGKILL test (`tests/slow_sigkill_recovery.rs`), not a tool: records the
//! scripted conversation into the store root given as the only argument, printing the number of
//! completed steps after each one (0 after the start, then 1, 2, …, then `closed`), so the test
//! knows what was handed over before it killed the process.

#[path = "../../tests/support/scripted_conversation.rs"]
mod scripted_conversation;

use std::io::Write;
use std::process::ExitCode;

use scripted_conversation::{Feed, START_UNIX_MS, config, script};
use walkie_store::Store;

fn main() -> ExitCode {
    let Some(root) = std::env::args_os().nth(1) else {
        eprintln!("usage: store-writer-fixture STORE_ROOT");
        return ExitCode::from(2);
    };
    let store = Store::new(root);
    let mut recorder = match store.start(config(), START_UNIX_MS) {
        Ok(recorder) => recorder,
        Err(error) => {
            eprintln!("could not start: {error}");
            return ExitCode::FAILURE;
        }
    };
    let mut feed = Feed::new(&recorder);
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "0").and_then(|()| out.flush());
    for (index, step) in script().iter().enumerate() {
        feed.step(&mut recorder, step, step.unix_ms);
        if let Some(problem) = recorder.save_problem() {
            eprintln!("saving failed: {problem}");
            return ExitCode::FAILURE;
        }
        let _ = writeln!(out, "{}", index + 1).and_then(|()| out.flush());
    }
    let last = script().last().map_or(START_UNIX_MS, |step| step.unix_ms);
    if let Err(error) = feed.close(&mut recorder, last + 20) {
        eprintln!("could not close: {error}");
        return ExitCode::FAILURE;
    }
    let _ = writeln!(out, "closed").and_then(|()| out.flush());
    ExitCode::SUCCESS
}
