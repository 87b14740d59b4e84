//! `walkie-local-provider [--port N] [--token T]`: serves the local realtime provider on
//! 127.0.0.1 until interrupted. The token may also come from `WALKIE_LOCAL_TOKEN`.

use std::process::ExitCode;

use walkie_local::{LocalProvider, ProviderConfig};

const USAGE: &str = "usage: walkie-local-provider [--port N] [--token T]";

fn parse(args: impl Iterator<Item = String>) -> Result<ProviderConfig, String> {
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
            "-h" | "--help" => return Err(USAGE.to_owned()),
            other => return Err(format!("unknown argument {other:?}\n{USAGE}")),
        }
    }
    Ok(config)
}

#[tokio::main]
async fn main() -> ExitCode {
    let config = match parse(std::env::args().skip(1)) {
        Ok(config) => config,
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
    println!("walkie-local-provider listening on {}", provider.base_url());
    if let Err(error) = tokio::signal::ctrl_c().await {
        eprintln!("walkie-local-provider: cannot wait for Ctrl-C: {error}");
    }
    provider.shutdown().await;
    ExitCode::SUCCESS
}
