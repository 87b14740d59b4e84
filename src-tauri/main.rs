// Keep a release build on Windows from opening a console window beside the app.
#![cfg_attr(not(debug_assertions), windows_subsystem = "windows")]

fn main() {
    use walkie_app::remote::{Launch, USAGE, parse};
    // Checked before a running Walkie is handed them: a typo is told here, in the terminal or
    // the desktop's shortcut log, not lost in the other process.
    match parse(std::env::args().skip(1)) {
        Ok(Launch::Run { hidden, .. }) => walkie_app::run(hidden),
        Ok(Launch::Help) => println!("{USAGE}"),
        Err(error) => {
            eprintln!("walkie: {error}");
            std::process::exit(2);
        }
    }
}
