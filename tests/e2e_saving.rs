//! A full disk mid-conversation is told in the window and costs no word: the real window, the
//! app's own local provider, real audio, and a data folder on a tiny tmpfs. After one exchange
//! the disk is filled; the next exchange goes on, and back at Ready the window says the
//! conversation is not being saved, why, and what to do (Open Settings for another folder).
//! Once space is freed, saving resumes by itself and says so, and the conversation on disk
//! holds both exchanges.
//!
//! Slow test (X server, WebKitWebDriver, PulseAudio, mount); it runs in CI, as root. Where
//! mounting is refused (not root), it says so and checks nothing.
//!
//! What is saved is the user's: a conversation saved without audio says so under the talk
//! button and leaves its transcript and no WAV; a choice of nothing, made in History, takes
//! the next conversation, which says so and leaves no folder at all.

mod support;

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;
use support::audio::require_test_audio;
use support::{
    AppDirs, Launch, WebviewApp, click, rendered_text, spoken_exchange, texts, wait_for,
    wait_for_state, wait_for_text,
};
use walkie_store::{Store, conversations_dir};

const TEST: &str = "disk_full";

/// A tmpfs of `size_kib` mounted over `path` for the test's life.
struct TinyDisk(PathBuf);

impl TinyDisk {
    fn mount(path: &Path, size_kib: u32) -> Option<TinyDisk> {
        let status = Command::new("mount")
            .args([
                "-t",
                "tmpfs",
                "-o",
                &format!("size={size_kib}k,mode=0700"),
                "tmpfs",
            ])
            .arg(path)
            .stderr(std::process::Stdio::null())
            .status()
            .ok()?;
        status.success().then(|| TinyDisk(path.to_owned()))
    }
}

impl Drop for TinyDisk {
    fn drop(&mut self) {
        // Lazily: the app may still hold files open while it shuts down.
        let _ = Command::new("umount").arg("-l").arg(&self.0).status();
    }
}

fn running_as_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|output| output.stdout.starts_with(b"0"))
}

#[tokio::test(flavor = "multi_thread")]
async fn e2e_a_full_disk_is_told_in_the_window_and_saving_resumes_when_space_returns() {
    require_test_audio();
    let dirs = AppDirs::fresh(TEST);
    let Some(disk) = TinyDisk::mount(&dirs.data, 4096) else {
        assert!(!running_as_root(), "root must be able to mount a tmpfs");
        eprintln!("not root: a full disk cannot be made here");
        return;
    };
    let app = WebviewApp::launch_with(TEST, Launch::in_dirs(&dirs, None)).await;
    let data = dirs.data.clone();
    app.run(|client| async move {
        wait_for_state(&client, "ready").await;
        spoken_exchange(&client, 1.0, 0).await;

        // Fill the disk.
        let filler = data.join("filler");
        let mut filling = std::fs::File::create(&filler).expect("the filler");
        let block = vec![0u8; 4096];
        while std::io::Write::write_all(&mut filling, &block).is_ok() {}
        drop(filling);

        spoken_exchange(&client, 1.0, 1).await;
        let status = wait_for(&client, "#status", |status| {
            status.starts_with("Not saving")
        })
        .await;
        let banner = rendered_text(&client, "#banner [data-role=text]")
            .await
            .unwrap_or_default();
        assert!(
            banner.starts_with(
                "The disk is full. Free some space, or choose another data folder in Settings"
            ),
            "the banner says what to do: {banner:?} ({status})"
        );
        let action = rendered_text(&client, "#banner [data-role=action]").await;
        assert_eq!(action.as_deref(), Some("Open Settings"));
        support::click(&client, "#banner [data-role=details] summary").await;
        wait_for(&client, "#banner [data-role=details-text]", |details| {
            details.contains("No space left on device")
        })
        .await;
        support::screenshot(&client, "disk-full").await;

        // Space returns: saving resumes by itself, and says so.
        std::fs::remove_file(&filler).expect("freeing the disk");
        wait_for(&client, "#status", |status| {
            status == "Saving again: the conversation so far is on disk."
        })
        .await;
    })
    .await;
    let store = Store::new(conversations_dir(&dirs.data));
    let saved = store.list().expect("the saved conversations");
    assert_eq!(saved.len(), 1, "{saved:?}");
    let conversation = store.open(&saved[0].id).expect("it reads back");
    let roles: Vec<_> = conversation
        .messages()
        .iter()
        .map(|message| format!("{:?}", message.role()))
        .collect();
    assert_eq!(
        roles.len(),
        4,
        "both exchanges are on disk, the one said while the disk was full too: {roles:?}"
    );
    drop(disk);
}

#[tokio::test(flavor = "multi_thread")]
async fn e2e_a_conversation_saved_without_audio_or_not_at_all_says_so_at_the_talk_button() {
    require_test_audio();
    let test = "save_choices";
    let dirs = AppDirs::fresh(test);
    std::fs::write(
        dirs.config.join("settings.json"),
        r#"{"saved": "transcriptsOnly"}"#,
    )
    .expect("writing the settings");
    let app = WebviewApp::launch_with(test, Launch::in_dirs(&dirs, None)).await;
    app.run(|client| async move {
        wait_for_state(&client, "ready").await;
        wait_for_text(
            &client,
            "#saving-note",
            "Saving this conversation's words, not its audio.",
        )
        .await;
        spoken_exchange(&client, 1.0, 0).await;

        // Nothing, chosen in History, waits for the next conversation.
        click(&client, "#open-history").await;
        wait_for(&client, "#history-saved", |_| true).await;
        client
            .execute(
                "const select = document.getElementById('history-saved');
                 select.value = 'nothing';
                 select.dispatchEvent(new Event('change'));",
                vec![],
            )
            .await
            .unwrap();
        wait_for_text(
            &client,
            "#history-notice",
            "From the next conversation on, nothing is saved.",
        )
        .await;
        support::screenshot(&client, "history-save-nothing").await;
        click(&client, "#history-close").await;
        assert_eq!(
            rendered_text(&client, "#saving-note").await.as_deref(),
            Some("Saving this conversation's words, not its audio."),
            "the conversation going on keeps what it began with"
        );
        click(&client, "#connect").await;
        wait_for_text(
            &client,
            "#saving-note",
            "Nothing of this conversation is saved.",
        )
        .await;
        wait_for_state(&client, "ready").await;
        let replies = texts(&client, "assistant").await.len();
        spoken_exchange(&client, 1.0, replies).await;
        support::screenshot(&client, "saving-nothing").await;
    })
    .await;

    let store = Store::new(conversations_dir(&dirs.data));
    let saved = store.list().expect("the saved conversations");
    assert_eq!(
        saved.len(),
        1,
        "the conversation of nothing left no folder: {saved:?}"
    );
    let conversation = store.open(&saved[0].id).expect("it reads back");
    assert_eq!(conversation.messages().len(), 2, "its words are saved");
    assert!(
        conversation
            .turns()
            .all(|turn| turn.user_wav.is_none() && turn.assistant_wav.is_none()),
        "no turn WAV in its journal"
    );
    let folder = store.dir_of(&saved[0].id).unwrap();
    let wavs: Vec<_> = std::fs::read_dir(folder.join("turns"))
        .map(|entries| {
            entries
                .filter_map(Result::ok)
                .map(|entry| entry.file_name())
                .filter(|name| name.to_string_lossy().ends_with(".wav"))
                .collect()
        })
        .unwrap_or_default();
    assert!(wavs.is_empty(), "no WAV on disk: {wavs:?}");
    let settings: Value =
        serde_json::from_str(&std::fs::read_to_string(dirs.config.join("settings.json")).unwrap())
            .unwrap();
    assert_eq!(
        settings["saved"], "nothing",
        "the choice is kept: {settings}"
    );
}
