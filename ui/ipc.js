// The page's whole contract with the Rust shell: every command it invokes and every event it
// listens to, by name. No other module spells one; a Rust test (src-tauri/ipc_contract.rs)
// checks these lists against the commands the shell registers and the events it emits, and
// ui/tests/ipc.test.js that the page uses these names only.

/** The shell's commands, as `invoke` takes them. */
export const COMMANDS = Object.freeze({
  status: "status",
  connect: "connect",
  cancelReconnect: "cancel_reconnect",
  pushToTalk: "push_to_talk",
  cancelPress: "cancel_press",
  setTurnMode: "set_turn_mode",
  sendMessage: "send_message",
  attachPicture: "attach_picture",
  detachPicture: "detach_picture",
  screenshotTargets: "screenshot_targets",
  attachScreenshot: "attach_screenshot",
  toolDecision: "tool_decision",
  checkToolServer: "check_tool_server",
  toolServerSecrets: "tool_server_secrets",
  saveToolServerSecrets: "save_tool_server_secrets",
  copyText: "copy_text",
  getSettings: "get_settings",
  listDevices: "list_devices",
  saveSettings: "save_settings",
  checkSettings: "check_settings",
  testConnection: "test_connection",
  previewVoice: "preview_voice",
  stopVoicePreview: "stop_voice_preview",
  micTestStart: "mic_test_start",
  micTestStop: "mic_test_stop",
  chooseDataFolder: "choose_data_folder",
  setApiKey: "set_api_key",
  forgetApiKey: "forget_api_key",
  historyList: "history_list",
  historySearch: "history_search",
  historyOpen: "history_open",
  historyContinue: "history_continue",
  historyDelete: "history_delete",
  historyRename: "history_rename",
  historyExport: "history_export",
  historyOpenFolder: "history_open_folder",
  historyRetention: "history_retention",
  historySetRetention: "history_set_retention",
  historySaved: "history_saved",
  historySetSaved: "history_set_saved",
  savingInForce: "saving_in_force",
  historyExpiring: "history_expiring",
});

/** The shell's events, as `listen` takes them. */
export const EVENTS = Object.freeze({
  updates: "walkie://updates",
  saving: "walkie://saving",
  connectionHealth: "walkie://connection-health",
  micTest: "walkie://mic-test",
  pictureDropped: "walkie://picture-dropped",
  toolApproval: "walkie://tool-approval",
  toolApprovalClosed: "walkie://tool-approval-closed",
});
