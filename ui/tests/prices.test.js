import { test } from "node:test";
import assert from "node:assert/strict";
import { PRICE_COLUMNS, priceRowsForSettings, priceTableProblem } from "../prices.js";

const row = (model, value = "1") => {
  const out = { model, takenOn: "" };
  for (const [key] of PRICE_COLUMNS) out[key] = value;
  return out;
};

test("every price must be a number of dollars, and the problem names the model and the price", () => {
  assert.equal(priceTableProblem([row("gpt-realtime"), row("mine", "0.40")]), null);
  const wrong = row("gpt-realtime");
  wrong.audioOut = "64$";
  assert.equal(
    priceTableProblem([wrong]),
    "gpt-realtime's audio out price must be a number of dollars per million tokens, e.g. 4 or 0.40",
  );
  assert.match(priceTableProblem([row(" ", "")]), /^row 1's text in price/);
});

test("the rows go to the settings with numbers and trimmed names, the date kept", () => {
  const published = { ...row(" gpt-realtime ", "4"), takenOn: "2025-08-28" };
  const [saved] = priceRowsForSettings([published]);
  assert.equal(saved.model, "gpt-realtime");
  assert.equal(saved.takenOn, "2025-08-28");
  assert.equal(saved.audioOut, 4);
  assert.equal(typeof saved.cachedImageIn, "number");
});
