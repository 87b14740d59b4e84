//! `walkie-local-provider [--port N] [--token T] [--faults FILE]`: serves the local realtime
//! provider on 127.0.0.1 until interrupted, injecting the faults of scenario FILE if given.
//! The token may also come from `WALKIE_LOCAL_TOKEN`.
//!
//! `walkie-local-provider --scenario FILE`: serves with FILE's faults, runs FILE's client
//! script against itself, prints what happened, and exits 0 if the script passed.

use std::process::ExitCode;

use walkie_local::scenario::{self, Scenario};
use walkie_local::{LocalProvider, ProviderConfig};
use walkie_rtc::Auth;

const USAGE: &str =
    "usage: walkie-local-provider [--port N] [--token T] [--faults FILE] [--scenario FILE]";

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
        ..ProviderConfig::default()
    };
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
    let provider = match LocalProvider::start(config).await {
        Ok(provider) => provider,
        Err(error) => {
            eprintln!("walkie-local-provider: cannot listen: {error}");
            return ExitCode::FAILURE;
        }
    };
    if let Some(scenario) = run {
        let auth = config_auth(&provider);
        let result = scenario::run(&scenario, &provider.base_url(), auth).await;
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
    println!("walkie-local-provider listening on {}", provider.base_url());
    if let Err(error) = tokio::signal::ctrl_c().await {
        eprintln!("walkie-local-provider: cannot wait for Ctrl-C: {error}");
    }
    provider.shutdown().await;
    ExitCode::SUCCESS
}

fn config_auth(provider: &LocalProvider) -> Auth {
    match provider.token() {
        Some(token) => Auth::Bearer(token.to_owned()),
        None => Auth::None,
    }
}
