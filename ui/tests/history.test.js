import { test } from "node:test";
import assert from "node:assert/strict";
import {
  RETENTION_DAYS,
  audioByMessage,
  conversationMeta,
  conversationTitle,
  formatClock,
  formatDurationMs,
  formatStarted,
  retentionFromValue,
  retentionLabel,
  retentionToValue,
} from "../history.js";

test("durations read in seconds, minutes or hours, never as raw milliseconds", () => {
  assert.equal(formatDurationMs(0), "0 s");
  assert.equal(formatDurationMs(42_400), "42 s");
  assert.equal(formatDurationMs(59_499), "59 s");
  assert.equal(formatDurationMs(60_000), "1 min 00 s");
  assert.equal(formatDurationMs(185_000), "3 min 05 s");
  assert.equal(formatDurationMs(3_600_000 + 2 * 60_000 + 30_000), "1 h 02 min");
  assert.equal(formatDurationMs(-5), "0 s");
});

test("the start time is shown in the zone asked for", () => {
  const at = Date.UTC(2024, 2, 12, 9, 5);
  const utc = formatStarted(at, { locale: "en-GB", timeZone: "UTC" });
  const paris = formatStarted(at, { locale: "en-GB", timeZone: "Europe/Paris" });
  assert.match(utc, /12 Mar 2024/);
  assert.match(utc, /09:05/);
  assert.match(paris, /10:05/);
});

test("a listing line says when, how long and how many turns", () => {
  const line = conversationMeta(
    { startedUnixMs: Date.UTC(2024, 2, 12, 9, 5), durationMs: 185_000, turnCount: 1 },
    { locale: "en-GB", timeZone: "UTC" },
  );
  assert.match(line, /^12 Mar 2024, 09:05 · 3 min 05 s · 1 turn$/);
  const many = conversationMeta(
    { startedUnixMs: 0, durationMs: 1_000, turnCount: 3 },
    { locale: "en-GB", timeZone: "UTC" },
  );
  assert.match(many, / · 1 s · 3 turns$/);
});

test("a conversation where nothing was said still has a title", () => {
  assert.equal(conversationTitle({ title: "Hello there …" }), "Hello there …");
  assert.equal(conversationTitle({ title: "  " }), "Nothing said");
  assert.equal(conversationTitle({}), "Nothing said");
});

test("each message gets the WAV of its own side of its turn, and only those that exist", () => {
  const audio = audioByMessage([
    {
      turn: 1,
      userMessageId: "user-1",
      assistantMessageId: "assistant-1",
      userAudio: { path: "/data/conversations/a/turns/0001-user.wav", durationMs: 1500 },
      assistantAudio: { path: "/data/conversations/a/turns/0001-assistant.wav", durationMs: 900 },
    },
    {
      turn: 2,
      userMessageId: "user-2",
      assistantMessageId: "assistant-2",
      userAudio: null,
      assistantAudio: { path: "/data/conversations/a/turns/0002-assistant.wav", durationMs: 300 },
    },
  ]);
  assert.deepEqual([...audio.keys()], ["user-1", "assistant-1", "assistant-2"]);
  assert.equal(audio.get("user-1").path, "/data/conversations/a/turns/0001-user.wav");
  assert.equal(audio.get("assistant-1").durationMs, 900);
  assert.equal(audio.get("user-1").label, "Play what you said in turn 1");
  assert.equal(audio.get("assistant-2").label, "Play Walkie's reply in turn 2");
  assert.equal(audio.has("user-2"), false);
});

test("retention round-trips between the select and the policy Rust reads", () => {
  for (const days of RETENTION_DAYS) {
    const value = days === null ? "forever" : String(days);
    assert.equal(retentionToValue(retentionFromValue(value)), value);
  }
  assert.deepEqual(retentionFromValue("30"), { kind: "keepDays", days: 30 });
  assert.deepEqual(retentionFromValue("forever"), { kind: "forever" });
  assert.equal(retentionToValue({ kind: "keepDays", days: 14 }), "14");
  assert.equal(retentionToValue(undefined), "forever");
  for (const bad of ["0", "-3", "2.5", "", "soon"]) {
    assert.throws(() => retentionFromValue(bad), RangeError, bad);
  }
});

test("retention choices read as words", () => {
  assert.equal(retentionLabel(null), "forever");
  assert.equal(retentionLabel(1), "for 1 day");
  assert.equal(retentionLabel(30), "for 30 days");
  assert.equal(retentionLabel(365), "for a year");
});

test("a player's clock shows minutes and seconds, and a dash while the length is unknown", () => {
  assert.equal(formatClock(0), "0:00");
  assert.equal(formatClock(1.8), "0:01");
  assert.equal(formatClock(61.2), "1:01");
  assert.equal(formatClock(754), "12:34");
  assert.equal(formatClock(Number.NaN), "–:––");
  assert.equal(formatClock(Number.POSITIVE_INFINITY), "–:––");
  assert.equal(formatClock(-1), "–:––");
});
