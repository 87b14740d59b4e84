//! A provider that floods one reply with text never grows Walkie without bound and never ends
//! the call: the real window, the real local provider (in this process, so the test can give
//! it the fault), real audio. In the first turn the provider sends 64 MiB of transcript deltas
//! for the reply (`WALKIE_FLOOD_MIB` sets how much; the bench runs 1 GiB) as fast as the data
//! channel takes them. Walkie keeps the first 256 KiB of the message, says the rest was left
//! out (the reply's final transcript then replaces the deltas, as it does), and answers the
//! next turn on the same call; its peak resident memory grows by less than
//! [`WALKIE_GROWTH_BOUND_MIB`], and the saved conversation stays small.
//!
//! Slow test (X server, WebKitWebDriver, PulseAudio); it runs in CI.

mod support;

use std::time::{Duration, Instant};

use support::audio::require_test_audio;
use support::{
    AppDirs, Launch, SecretService, WebviewApp, space, spoken_exchange, talk_to_custom_server,
    texts, wait_for, wait_for_within,
};
use walkie_local::fault::Fault;
use walkie_local::{LocalProvider, ProviderConfig};
use walkie_session::turn::MAX_TRANSCRIPT_BYTES;

const TEST: &str = "hostile_flood";
/// How much Walkie's peak resident memory may grow over the flood, whatever its size.
const WALKIE_GROWTH_BOUND_MIB: u64 = 32;
/// Each flooded delta: under the data channel's 64 KiB message limit with the event around it.
const DELTA_BYTES: u32 = 60 * 1024;

fn flood_mib() -> u64 {
    std::env::var("WALKIE_FLOOD_MIB")
        .ok()
        .map(|mib| {
            mib.parse()
                .expect("WALKIE_FLOOD_MIB is a whole number of MiB")
        })
        .unwrap_or(64)
}

/// A `/proc/<pid>/status` figure in bytes (`VmRSS`, `VmHWM`).
fn memory_bytes(pid: u32, field: &str) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("Linux's /proc");
    let kib: u64 = status
        .lines()
        .find_map(|line| line.strip_prefix(field)?.strip_prefix(':'))
        .and_then(|rest| rest.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or_else(|| panic!("{field} in kB"));
    kib * 1024
}

fn mib(bytes: u64) -> f64 {
    bytes as f64 / (1024.0 * 1024.0)
}

/// The bytes of every file under `dir` but the recordings.
fn saved_bytes_but_audio(dir: &std::path::Path) -> u64 {
    let mut total = 0;
    for entry in std::fs::read_dir(dir).expect("a folder").flatten() {
        let path = entry.path();
        if path.is_dir() {
            total += saved_bytes_but_audio(&path);
        } else if path.extension().is_none_or(|extension| extension != "wav") {
            total += entry.metadata().map_or(0, |metadata| metadata.len());
        }
    }
    total
}

#[tokio::test(flavor = "multi_thread")]
async fn e2e_a_reply_flooded_with_text_keeps_its_first_256_kib_says_so_and_the_call_goes_on() {
    require_test_audio();
    let flood_bytes = flood_mib() * 1024 * 1024;
    let dirs = AppDirs::fresh(TEST);
    let provider = LocalProvider::start(ProviderConfig {
        trace_dir: Some(dirs.trace.clone()),
        faults: vec![Fault::Flood {
            event_type: "response.output_audio_transcript.delta".to_owned(),
            total_bytes: flood_bytes,
            delta_bytes: DELTA_BYTES,
        }],
        ..ProviderConfig::default()
    })
    .await
    .expect("a local provider on loopback");
    let secrets = SecretService::start(&dirs);
    let app = WebviewApp::launch_with(TEST, Launch::in_dirs(&dirs, Some(&secrets))).await;
    let walkie = app.walkie_pid();
    let webview: Vec<u32> = app
        .app_pids()
        .into_iter()
        .filter(|&pid| pid != walkie)
        .collect();
    let data_dir = app.data_dir().to_owned();
    let (base_url, token) = (provider.base_url(), provider.token().to_owned());
    app.run(move |client| async move {
        talk_to_custom_server(&client, &base_url, &token).await;
        let before_bytes = memory_bytes(walkie, "VmRSS");
        let webview_before: Vec<String> = webview
            .iter()
            .filter(|pid| std::path::Path::new(&format!("/proc/{pid}")).exists())
            .map(|&pid| format!("{:.1}", mib(memory_bytes(pid, "VmRSS"))))
            .collect();

        space(&client, true).await;
        wait_for(&client, "#status", |status| status.starts_with("Listening")).await;
        let words = support::audio::speech_like(1.2);
        tokio::task::spawn_blocking(move || {
            support::audio::PulseStream::speak_into_microphone(&words)
        })
        .await
        .expect("the microphone stream");
        space(&client, false).await;
        let released = Instant::now();
        // The flood arrives as fast as the data channel carries it, so the wait grows with its
        // size.
        let within = Duration::from_secs(60 + flood_mib() / 4);
        wait_for_within(&client, "#status", within, |status| {
            status.starts_with("Call goes on")
        })
        .await;
        let flooded_in = released.elapsed();
        let sentence = client
            .execute("return document.getElementById('status').title;", vec![])
            .await
            .expect("the status sentence");
        assert_eq!(
            sentence.as_str(),
            Some(
                "Call goes on: the provider sent more text for one message than Walkie keeps \
                 (256 KiB), so the rest was left out."
            ),
            "the window says the message was cut, and that the call goes on"
        );
        // The deltas were cut at the cap; the reply's final transcript (the provider's own
        // words, short) then replaced them, as a final transcript does.
        let replied = texts(&client, "assistant").await;
        assert_eq!(replied.len(), 1, "one reply");
        assert!(
            replied[0].contains("played your"),
            "{}",
            &replied[0][..replied[0].len().min(80)]
        );

        let peak_bytes = memory_bytes(walkie, "VmHWM");
        let growth_bytes = peak_bytes.saturating_sub(before_bytes);
        let webview_peaks: Vec<String> = webview
            .iter()
            .filter(|pid| std::path::Path::new(&format!("/proc/{pid}")).exists())
            .map(|&pid| format!("{:.1}", mib(memory_bytes(pid, "VmHWM"))))
            .collect();
        eprintln!(
            "flood: {} MiB of deltas in {:.1} s ({:.1} MiB/s); Walkie RSS {:.1} MiB before, \
             peak {:.1} MiB (+{:.1} MiB); the webview's processes: {} MiB before, peaks {} MiB",
            flood_mib(),
            flooded_in.as_secs_f64(),
            flood_mib() as f64 / flooded_in.as_secs_f64(),
            mib(before_bytes),
            mib(peak_bytes),
            mib(growth_bytes),
            webview_before.join(", "),
            webview_peaks.join(", "),
        );
        assert!(
            growth_bytes < WALKIE_GROWTH_BOUND_MIB * 1024 * 1024,
            "Walkie grew by {:.1} MiB over a {} MiB flood",
            mib(growth_bytes),
            flood_mib()
        );

        // The same call answers the next turn.
        spoken_exchange(&client, 0.8, 1).await;
        let replied = texts(&client, "assistant").await;
        assert_eq!(replied.len(), 2, "two replies");
    })
    .await;
    assert_eq!(
        provider.calls_total(),
        1,
        "one call carried both turns: no redial"
    );
    let saved = support::texts_of_the_saved_conversation(&data_dir, "one call, one conversation");
    assert_eq!(saved.len(), 4, "{} messages saved", saved.len());
    assert!(
        saved[1].len() <= MAX_TRANSCRIPT_BYTES,
        "the cut reply is saved as shown"
    );
    assert!(
        saved[3].contains("played your"),
        "the second reply is whole: {}",
        saved[3]
    );
    let on_disk = saved_bytes_but_audio(&walkie_store::conversations_dir(&data_dir));
    eprintln!(
        "flood: the saved conversation holds {:.2} MiB besides its recordings",
        mib(on_disk)
    );
    assert!(
        on_disk < 4 * MAX_TRANSCRIPT_BYTES as u64,
        "the journal and transcript hold the kept text, not the flood: {on_disk} bytes"
    );
}
