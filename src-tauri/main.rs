// Keep a release build on Windows from opening a console window beside the app.
#![cfg_attr(not(debug_assertions), windows_subsystem = "windows")]

fn main() {
    use walkie_app::remote::{Launch, USAGE, parse};
    // Checked before a running Walkie is handed them: a typo is told here, in the terminal or
    // the desktop's shortcut log, not lost in the other process.
    match parse(std::env::args().skip(1)) {
        Ok(Launch::Run { hidden, .. }) => {
            if let Some((name, value)) = walkie_app::desktop::webview_renderer_environment() {
                // WebKitGTK reads it from the environment alone, at its start.
                // SAFETY: no other thread has started yet.
                #[allow(unsafe_code)]
                unsafe {
                    std::env::set_var(name, value)
                };
            }
            walkie_app::run(hidden)
        }
        Ok(Launch::Help) => println!("{USAGE}"),
        Err(error) => {
            eprintln!("walkie: {error}");
            std::process::exit(2);
        }
    }
}
