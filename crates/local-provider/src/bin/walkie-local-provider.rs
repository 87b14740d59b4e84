//! `walkie-local-provider [--port N] [--token T] [--faults FILE] [--trace DIR]`: serves the
//! local realtime provider on 127.0.0.1 until interrupted, injecting the faults of scenario FILE
//! if given. Every request needs `Authorization: Bearer <token>`: the token comes from `--token`
//! or `WALKIE_LOCAL_TOKEN`, else one is made for this run and printed once at start. The trace
//! directory (what the provider received, for the oracle) may come from `WALKIE_LOCAL_TRACE`.
//!
//! `--calls-fault SPEC` makes the calls endpoint fail: SPEC is an error status (`400`–`599`,
//! with `--fault-message TEXT` and, e.g. for 429, `--retry-after SECONDS`) or `no-location`
//! (the call is answered without `Location`); `--calls-fault-times N` limits it to N calls.
//!
//! `walkie-local-provider --scenario FILE`: serves with FILE's faults, runs FILE's client
//! script against itself, prints what happened, and exits 0 if the script passed.

use std::io::Write;
use std::process::ExitCode;

use walkie_local::scenario::{self, Scenario};
use walkie_local::{HttpFault, LocalProvider, ProviderConfig};

const USAGE: &str = "usage: walkie-local-provider [--port N] [--token T] [--faults FILE] [--trace DIR] [--calls-fault STATUS|no-location [--fault-message TEXT] [--retry-after S] [--calls-fault-times N]] [--scenario FILE]";

fn number<T: std::str::FromStr>(flag: &str, value: Option<String>) -> Result<T, String> {
    let value = value.ok_or_else(|| format!("{flag} needs a value"))?;
    value
        .parse()
        .map_err(|_| format!("{flag}: {value:?} is not a number"))
}

fn load_scenario(path: &str) -> Result<Scenario, String> {
    let text = std::fs::read_to_string(path).map_err(|error| format!("{path}: {error}"))?;
    Scenario::from_json(&text).map_err(|error| format!("{path}: {error}"))
}

fn parse(args: impl Iterator<Item = String>) -> Result<(ProviderConfig, Option<Scenario>), String> {
    let mut run: Option<Scenario> = None;
    let mut config = ProviderConfig {
        port: 8765,
        token: std::env::var("WALKIE_LOCAL_TOKEN")
            .ok()
            .filter(|t| !t.is_empty()),
        ..ProviderConfig::from_env()
    };
    let mut fault_message: Option<String> = None;
    let mut retry_after_s: Option<u64> = None;
    let mut args = args;
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--port" => {
                let value = args.next().ok_or("--port needs a value")?;
                config.port = value
                    .parse()
                    .map_err(|_| format!("--port: {value:?} is not a port number"))?;
            }
            "--token" => config.token = Some(args.next().ok_or("--token needs a value")?),
            "--trace" => {
                config.trace_dir = Some(args.next().ok_or("--trace needs a directory")?.into());
            }
            "--calls-fault" => {
                let spec = args
                    .next()
                    .ok_or("--calls-fault needs a status or no-location")?;
                config.calls_fault = Some(HttpFault::parse(&spec)?);
            }
            "--fault-message" => {
                fault_message = Some(args.next().ok_or("--fault-message needs a text")?);
            }
            "--retry-after" => retry_after_s = Some(number("--retry-after", args.next())?),
            "--calls-fault-times" => {
                config.calls_fault_times = Some(number("--calls-fault-times", args.next())?);
            }
            "--faults" => {
                let path = args.next().ok_or("--faults needs a scenario file")?;
                config.faults = load_scenario(&path)?.faults;
            }
            "--scenario" => {
                let path = args.next().ok_or("--scenario needs a scenario file")?;
                let scenario = load_scenario(&path)?;
                config.faults = scenario.faults.clone();
                config.port = 0;
                run = Some(scenario);
            }
            "-h" | "--help" => return Err(USAGE.to_owned()),
            other => return Err(format!("unknown argument {other:?}\n{USAGE}")),
        }
    }
    match &mut config.calls_fault {
        Some(HttpFault::Status {
            message,
            retry_after_s: retry,
            ..
        }) => {
            *message = fault_message;
            *retry = retry_after_s;
        }
        _ if fault_message.is_some() || retry_after_s.is_some() => {
            return Err(
                "--fault-message and --retry-after go with --calls-fault STATUS".to_owned(),
            );
        }
        _ => {}
    }
    Ok((config, run))
}

#[tokio::main]
async fn main() -> ExitCode {
    let (config, run) = match parse(std::env::args().skip(1)) {
        Ok(parsed) => parsed,
        Err(message) => {
            eprintln!("{message}");
            return ExitCode::from(2);
        }
    };
    let token_given = config.token.is_some();
    let provider = match LocalProvider::start(config).await {
        Ok(provider) => provider,
        Err(error) => {
            eprintln!("walkie-local-provider: cannot listen: {error}");
            return ExitCode::FAILURE;
        }
    };
    if let Some(scenario) = run {
        let result = scenario::run(&scenario, &provider.base_url(), provider.auth()).await;
        provider.shutdown().await;
        return match result {
            Ok(report) => {
                for kind in report.event_types() {
                    println!("{kind}");
                }
                println!(
                    "scenario passed: {} audio packets received, end: {:?}",
                    report.audio_packets(),
                    report.end
                );
                ExitCode::SUCCESS
            }
            Err(error) => {
                eprintln!("scenario failed: {error}");
                ExitCode::FAILURE
            }
        };
    }
    let mut said = format!(
        "walkie-local-provider listening on {}\n",
        provider.base_url()
    );
    if !token_given {
        // Shown once, to whoever started it: no token was chosen, so nobody else knows it.
        said.push_str(&format!(
            "requests need Authorization: Bearer {} (choose one with --token or WALKIE_LOCAL_TOKEN)\n",
            provider.token()
        ));
    }
    // One write, and no panic when nobody reads any more (a closed pipe).
    let mut stdout = std::io::stdout().lock();
    let _ = stdout
        .write_all(said.as_bytes())
        .and_then(|()| stdout.flush());
    drop(stdout);
    if let Err(error) = tokio::signal::ctrl_c().await {
        eprintln!("walkie-local-provider: cannot wait for Ctrl-C: {error}");
    }
    provider.shutdown().await;
    ExitCode::SUCCESS
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parsed(args: &[&str]) -> Result<ProviderConfig, String> {
        parse(args.iter().map(|arg| (*arg).to_owned())).map(|(config, _)| config)
    }

    #[test]
    fn calls_faults_are_read_from_the_command_line() {
        let config = parsed(&[
            "--calls-fault",
            "429",
            "--retry-after",
            "3",
            "--fault-message",
            "Slow down",
            "--calls-fault-times",
            "2",
        ])
        .expect("valid flags");
        assert_eq!(
            config.calls_fault,
            Some(HttpFault::Status {
                status: 429,
                message: Some("Slow down".to_owned()),
                retry_after_s: Some(3)
            })
        );
        assert_eq!(config.calls_fault_times, Some(2));
        let config = parsed(&["--calls-fault", "no-location"]).expect("valid flags");
        assert_eq!(config.calls_fault, Some(HttpFault::NoLocation));
        assert!(parsed(&["--calls-fault", "200"]).is_err());
        assert!(
            parsed(&["--retry-after", "3"]).is_err(),
            "a retry without a fault"
        );
        assert!(parsed(&["--calls-fault", "503", "--retry-after", "soon"]).is_err());
    }
}
