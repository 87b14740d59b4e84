//! `agui-verify [--strict] [PATH | -]`: verifies a JSON array of AG-UI events and prints one JSON
//! object in the conformance file's shapes.
//!
//! Exit status: 0 for `{"outcome":"ok",…}`, 1 for `{"outcome":"violation",…}`, 2 when the input
//! cannot be read or is not a JSON array (the reason goes to stderr). `--strict` adds the
//! producer's obligations (REOPEN_MISMATCH). An element that is not a valid event, including one
//! whose text JSON cannot represent as a string (a lone UTF-16 surrogate escape), is a SCHEMA
//! violation at its index: Walkie's policy is to reject such text rather than guess at it.

use std::io::Read;
use std::process::ExitCode;

use serde_json::value::RawValue;
use walkie_agui::{Consumer, Mode};

const USAGE: &str = "usage: agui-verify [--strict] [PATH | -]\n\
reads a JSON array of AG-UI events from PATH (or stdin) and prints the verdict as JSON";

fn main() -> ExitCode {
    let mut mode = Mode::Consumer;
    let mut path: Option<String> = None;
    for argument in std::env::args().skip(1) {
        match argument.as_str() {
            "--strict" => mode = Mode::Strict,
            "-h" | "--help" => {
                println!("{USAGE}");
                return ExitCode::SUCCESS;
            }
            "-" if path.is_none() => path = Some(argument),
            flag if flag.starts_with("--") => {
                return unreadable(&format!("unknown option {flag}\n{USAGE}"));
            }
            _ if path.is_none() => path = Some(argument),
            _ => return unreadable(&format!("more than one input given\n{USAGE}")),
        }
    }

    let text = match path.as_deref() {
        None | Some("-") => {
            let mut text = String::new();
            match std::io::stdin().read_to_string(&mut text) {
                Ok(_) => text,
                Err(error) => return unreadable(&format!("cannot read standard input: {error}")),
            }
        }
        Some(path) => match std::fs::read_to_string(path) {
            Ok(text) => text,
            Err(error) => return unreadable(&format!("cannot read {path}: {error}")),
        },
    };

    // Split the array without decoding its elements, so one bad event is reported at its index
    // instead of making the whole input unreadable.
    let elements: Vec<&RawValue> = match serde_json::from_str(&text) {
        Ok(elements) => elements,
        Err(error) => {
            return unreadable(&format!("the input is not a JSON array of events: {error}"));
        }
    };

    let mut consumer = Consumer::new(mode);
    for element in elements {
        if consumer.push_json(element.get()).is_err() {
            break;
        }
    }
    println!("{}", consumer.report());
    if consumer.failure().is_some() {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    }
}

fn unreadable(reason: &str) -> ExitCode {
    eprintln!("agui-verify: {reason}");
    ExitCode::from(2)
}
