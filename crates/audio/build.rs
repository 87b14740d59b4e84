//! `native_streams`: Walkie's own PulseAudio and ALSA streams (`src/device/native.rs`) are
//! built on Linux; every other platform opens cpal's streams. `--cfg walkie_cpal_only` in
//! RUSTFLAGS builds the cpal-only path on Linux too, which is how these machines check it.

fn main() {
    println!("cargo::rustc-check-cfg=cfg(native_streams)");
    println!("cargo::rerun-if-changed=build.rs");
    let linux = std::env::var("CARGO_CFG_TARGET_OS").as_deref() == Ok("linux");
    let cpal_only = std::env::var_os("CARGO_CFG_WALKIE_CPAL_ONLY").is_some();
    if linux && !cpal_only {
        println!("cargo::rustc-cfg=native_streams");
    }
}
