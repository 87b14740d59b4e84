//! The echo canceller in the synthetic room, as a table: each room (delay, clock drift) with
//! and without noise suppression and a delay hint, and without the canceller, as
//! docs/benchmarks.md records it.
//!
//! `cargo run --release -p walkie-dsp --features testkit --example echo_room`

use walkie_dsp::testkit::room::{DoubleTalk, Room, cancel, frames_at_speech_level, median_erle_db};

fn main() {
    let seconds = 10;
    println!(
        "| delay | drift | canceller | median ERLE | frames at the voice detector's level (of {}) | delay found | user heard after |",
        seconds * 50
    );
    println!("|---|---|---|---|---|---|---|");
    for delay_ms in [20, 120, 450] {
        for drift_ppm in [100.0, -100.0, 1_000.0, -1_000.0] {
            let room = Room {
                delay_ms,
                drift_ppm,
            };
            let reply = room.reply(seconds, None);
            let raw = frames_at_speech_level(&reply.mic).len();
            println!("| {delay_ms} ms | {drift_ppm:+} ppm | none | – | {raw} | – | – |");
            let talk = room.reply(
                8,
                Some(DoubleTalk {
                    from_s: 6,
                    gain: 1.0,
                }),
            );
            for (noise_suppression, hint_ms) in [(true, 0), (false, 0), (true, delay_ms)] {
                let (sent, stats) = cancel(&reply, noise_suppression, hint_ms).expect("48 kHz");
                let erle = median_erle_db(&reply.echo, &sent, 2)
                    .map_or("–".to_owned(), |db| format!("{db:.1} dB"));
                let above = frames_at_speech_level(&sent);
                let (talk_sent, _) = cancel(&talk, noise_suppression, hint_ms).expect("48 kHz");
                let heard = frames_at_speech_level(&talk_sent[6 * 48_000..])
                    .first()
                    .map_or("never".to_owned(), |ms| format!("{ms} ms"));
                let first = above
                    .first()
                    .map_or(String::new(), |ms| format!(" (first at {ms} ms)"));
                println!(
                    "| {delay_ms} ms | {drift_ppm:+} ppm | AEC3{}{} | {erle} | {}{first} | {} ms | {heard} |",
                    if noise_suppression { " + NS" } else { "" },
                    if hint_ms > 0 { " + hint" } else { "" },
                    above.len(),
                    stats.delay_ms.map_or("–".to_owned(), |ms| ms.to_string()),
                );
            }
        }
    }
}
