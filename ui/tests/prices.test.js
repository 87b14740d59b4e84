import { test } from "node:test";
import assert from "node:assert/strict";
import { MINUTE_PRICES, TOKEN_PRICES, priceAgeNote, priceRowsForSettings, priceTableProblem } from "../prices.js";

const row = (model, value = "1", table = TOKEN_PRICES) => {
  const out = { model, takenOn: "" };
  for (const [key] of table.columns) out[key] = value;
  return out;
};

test("every price must be a number of dollars, and the problem names the model and the price", () => {
  assert.equal(priceTableProblem([row("gpt-realtime-2.1"), row("mine", "0.40")], TOKEN_PRICES), null);
  const wrong = row("gpt-realtime-2.1");
  wrong.audioOut = "64$";
  assert.equal(
    priceTableProblem([wrong], TOKEN_PRICES),
    "gpt-realtime-2.1's audio out price must be a number of dollars per million tokens, e.g. 4 or 0.40",
  );
  assert.match(priceTableProblem([row(" ", "")], TOKEN_PRICES), /^row 1's text in price/);
});

test("a per-minute price must be a number of dollars per minute, named by its own table's words", () => {
  assert.equal(priceTableProblem([row("gpt-realtime-whisper", "0.017", MINUTE_PRICES)], MINUTE_PRICES), null);
  const wrong = row("gpt-realtime-whisper", "0.017", MINUTE_PRICES);
  wrong.perPausedMinute = "free";
  assert.equal(
    priceTableProblem([wrong], MINUTE_PRICES),
    "gpt-realtime-whisper's per paused minute price must be a number of dollars per minute, e.g. 0.017",
  );
  assert.match(priceTableProblem([row("", "x", MINUTE_PRICES)], MINUTE_PRICES), /^per-minute row 1's per minute price/);
});

test("the rows go to the settings with numbers and trimmed names, the date kept", () => {
  const published = { ...row(" gpt-realtime-2.1 ", "4"), takenOn: "2026-12-04" };
  const [saved] = priceRowsForSettings([published], TOKEN_PRICES);
  assert.equal(saved.model, "gpt-realtime-2.1");
  assert.equal(saved.takenOn, "2026-12-04");
  assert.equal(saved.audioOut, 4);
  assert.equal(typeof saved.cachedImageIn, "number");
  const [minute] = priceRowsForSettings([row("gpt-transcribe", " 0.0045 ", MINUTE_PRICES)], MINUTE_PRICES);
  assert.deepEqual(minute, { model: "gpt-transcribe", takenOn: "", perMinute: 0.0045, perPausedMinute: 0.0045 });
});

test("a published price over 180 days old says to check the provider's page; a newer one says nothing", () => {
  const now = Date.UTC(2026, 11, 4, 12);
  assert.equal(priceAgeNote("2025-08-28", now), "over 180 days old: check the provider's price page");
  assert.equal(priceAgeNote("2026-06-07", now), "", "180 days is not over 180");
  assert.equal(priceAgeNote("2026-06-06", now), "over 180 days old: check the provider's price page");
  assert.equal(priceAgeNote("2026-12-04", now), "");
  assert.equal(priceAgeNote("", now), "");
  assert.equal(priceAgeNote("last spring", now), "");
});
