//! Nothing closed is ever lost: a writer process is killed with SIGKILL at random points of a
//! scripted conversation, 100 times; after each kill the store recovers the folder, and every
//! message and turn closed before the kill is there, every WAV opens with the samples handed
//! over before the kill, and `transcript.md` is the journal's rendering.
//!
//! Real processes, real files: the fixture binary (`store-writer-fixture`) prints how many steps
//! it completed; a step is "handed over" when its line was printed. The kill lands while the
//! writer runs, so the disk may also hold part of the next step: the checks accept anything
//! between "after K steps" and "after K + 1 steps".

mod support;

use std::io::{BufRead, BufReader, Read};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use support::scripted_conversation::{Expected, ScriptStep, expected_after, script};
use walkie_session::Speaker;
use walkie_store::files::TRANSCRIPT_MD_FILE;
use walkie_store::wav::read_wav_samples;
use walkie_store::{Store, needs_recovery, turn_wav_file};

const RUNS: usize = 100;

struct Killed {
    completed_steps: usize,
    closed: bool,
}

/// Runs the writer into `root` and kills it once it reported `kill_after` steps (plus a random
/// few microseconds, so the kill can land inside a step).
fn run_and_kill(root: &Path, kill_after: usize, rng: &mut fastrand::Rng) -> Killed {
    let mut child = Command::new(env!("CARGO_BIN_EXE_store-writer-fixture"))
        .arg(root)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the fixture binary was built by cargo for this test");
    let stdout = child.stdout.take().expect("stdout was piped");
    let mut lines = BufReader::new(stdout);
    let mut completed_steps = 0usize;
    let mut closed = false;
    let mut line = String::new();
    while completed_steps < kill_after && !closed {
        line.clear();
        if lines.read_line(&mut line).unwrap_or(0) == 0 {
            break;
        }
        match line.trim() {
            "closed" => closed = true,
            number => completed_steps = number.parse::<usize>().map_or(0, |n| n + 1),
        }
    }
    let spin_until = Instant::now() + Duration::from_micros(rng.u64(0..400));
    while Instant::now() < spin_until {
        std::hint::spin_loop();
    }
    child.kill().ok();
    let status = child.wait().expect("waiting for the killed fixture");
    let mut rest = String::new();
    lines.read_to_string(&mut rest).ok();
    for line in rest.lines() {
        match line.trim() {
            "closed" => closed = true,
            number => {
                if let Ok(n) = number.parse::<usize>() {
                    completed_steps = n + 1;
                }
            }
        }
    }
    if !closed && status.success() {
        panic!("the fixture exited on its own without closing");
    }
    let mut stderr = String::new();
    child
        .stderr
        .take()
        .expect("stderr was piped")
        .read_to_string(&mut stderr)
        .ok();
    assert!(
        !stderr.contains("failed") && !stderr.contains("could not"),
        "the writer reported a failure: {stderr}"
    );
    Killed {
        completed_steps,
        closed,
    }
}

/// `completed_steps` counts the start as one step; the script's steps follow it.
fn script_steps_done(completed_steps: usize) -> usize {
    completed_steps.saturating_sub(1)
}

fn check_wavs(dir: &Path, before: &Expected, after: &Expected, full: &Expected, run: usize) {
    for ((turn, speaker), _) in &full.wavs {
        let path = dir.join(turn_wav_file(*turn, *speaker));
        // The kill can land inside the next step, which may add samples or cut them (a barge-in).
        let len_before = before.wav(*turn, *speaker).map_or(0, <[i16]>::len);
        let len_after = after.wav(*turn, *speaker).map_or(0, <[i16]>::len);
        let (at_least, at_most) = (len_before.min(len_after), len_before.max(len_after));
        if before.wav(*turn, *speaker).is_none() && !path.exists() {
            continue;
        }
        let (rate, samples) = read_wav_samples(&path)
            .unwrap_or_else(|error| panic!("run {run}: {} does not open: {error}", path.display()));
        assert_eq!(rate, 24_000, "run {run}: {} rate", path.display());
        assert!(
            samples.len() >= at_least && samples.len() <= at_most,
            "run {run}: {} holds {} samples, expected {at_least}..={at_most}",
            path.display(),
            samples.len()
        );
        // Everything ever written is the reference: a cut only shortens it.
        let reference = full.ever_written(*turn, *speaker);
        assert!(
            samples[..] == reference[..samples.len().min(reference.len())],
            "run {run}: {} holds samples that were never written",
            path.display()
        );
    }
}

#[test]
fn slow_a_writer_killed_at_random_points_loses_nothing_it_closed() {
    let script: Vec<ScriptStep> = script();
    let total_steps = script.len() + 1;
    let full = expected_after(&script, script.len());
    let mut rng = fastrand::Rng::with_seed(0x5747_4b31);
    let started = Instant::now();
    let mut kills_inside = 0usize;
    for run in 0..RUNS {
        let root = tempfile::tempdir().expect("a temporary store root");
        let kill_after = rng.usize(0..=total_steps);
        let killed = run_and_kill(root.path(), kill_after, &mut rng);
        if !killed.closed {
            kills_inside += 1;
        }
        let done = script_steps_done(killed.completed_steps);
        let before = expected_after(&script, done);
        let after = expected_after(&script, done + 1);

        let store = Store::new(root.path());
        for report in store
            .recover(1_800_000_000_000, None)
            .expect("the root lists")
        {
            report.unwrap_or_else(|error| panic!("run {run}: recovery failed: {error}"));
        }
        let listed = store.list().expect("the store lists");
        if killed.completed_steps == 0 {
            // Killed before the start returned: nothing was handed over, and nothing half-made
            // may remain open.
            assert!(listed.iter().all(|summary| !summary.open), "run {run}");
            continue;
        }
        assert_eq!(listed.len(), 1, "run {run}: one conversation");
        let summary = &listed[0];
        assert!(
            !summary.open,
            "run {run}: recovered conversations are closed"
        );
        assert!(
            !needs_recovery(&summary.dir),
            "run {run}: recovery is complete"
        );

        let conversation = store.open_strict(&summary.id).unwrap_or_else(|error| {
            panic!("run {run}: the recovered journal has garbage: {error}")
        });
        assert!(
            conversation.open_messages().next().is_none(),
            "run {run}: every message is closed after recovery"
        );
        for (id, text) in &before.closed_messages {
            let message = conversation
                .messages()
                .iter()
                .find(|message| message.id() == id)
                .unwrap_or_else(|| panic!("run {run}: closed message {id} is missing"));
            assert_eq!(message.content(), Some(text.as_str()), "run {run}: {id}");
        }
        for turn in &before.ended_turns {
            let info = conversation
                .turn(*turn)
                .unwrap_or_else(|| panic!("run {run}: ended turn {turn} is missing"));
            assert!(info.ended_unix_ms.is_some(), "run {run}: turn {turn} ended");
            for speaker in [Speaker::User, Speaker::Assistant] {
                let recorded = match speaker {
                    Speaker::User => &info.user_wav,
                    Speaker::Assistant => &info.assistant_wav,
                };
                let expected = full.wav(*turn, speaker).map_or(0, <[i16]>::len) as u64;
                assert_eq!(
                    recorded.as_ref().map(|wav| wav.sample_count),
                    Some(expected),
                    "run {run}: turn {turn} {speaker:?} WAV as journaled"
                );
            }
        }
        check_wavs(&summary.dir, &before, &after, &full, run);

        let on_disk = std::fs::read_to_string(summary.dir.join(TRANSCRIPT_MD_FILE))
            .unwrap_or_else(|error| panic!("run {run}: transcript.md: {error}"));
        assert_eq!(
            on_disk,
            conversation.render_markdown(true),
            "run {run}: transcript.md is the journal's rendering"
        );
        for (_, text) in &before.closed_messages {
            assert!(
                on_disk.contains(text.as_str()),
                "run {run}: {text:?} in transcript.md"
            );
        }
    }
    assert!(
        kills_inside >= RUNS / 2,
        "most kills should land before the close ({kills_inside} of {RUNS})"
    );
    assert!(
        started.elapsed() < Duration::from_secs(60),
        "the kill test took {:?}",
        started.elapsed()
    );
}
