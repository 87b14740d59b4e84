//! Tauri's build step, with the app's own commands declared: declaring them makes Tauri deny
//! every command that the window's capability (tauri.conf.json) does not allow by name, so the
//! webview can call exactly the commands listed there and nothing else.

/// Every command in `tauri::generate_handler!` (src-tauri/lib.rs). A command missing here is
/// refused at run time; each needs its `allow-<name>` in the capability too.
const APP_COMMANDS: &[&str] = &[
    "status",
    "connect",
    "cancel_reconnect",
    "push_to_talk",
    "cancel_press",
    "send_message",
    "attach_picture",
    "detach_picture",
    "screenshot_targets",
    "attach_screenshot",
    "tool_decision",
    "check_tool_server",
    "tool_server_secrets",
    "save_tool_server_secrets",
    "copy_text",
    "get_settings",
    "list_devices",
    "save_settings",
    "set_turn_mode",
    "check_settings",
    "test_connection",
    "mic_test_start",
    "mic_test_stop",
    "preview_voice",
    "stop_voice_preview",
    "choose_data_folder",
    "set_api_key",
    "forget_api_key",
    "history_list",
    "history_search",
    "history_open",
    "history_continue",
    "history_delete",
    "history_rename",
    "history_export",
    "history_open_folder",
    "history_retention",
    "history_set_retention",
    "history_saved",
    "history_set_saved",
    "saving_in_force",
    "history_expiring",
];

fn main() {
    tauri_build::try_build(
        tauri_build::Attributes::new()
            .app_manifest(tauri_build::AppManifest::new().commands(APP_COMMANDS)),
    )
    .expect("the Tauri build step failed");
}
