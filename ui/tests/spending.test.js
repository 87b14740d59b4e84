import { test } from "node:test";
import assert from "node:assert/strict";
import { createSpending, dollars, spendingDetails, spendingLine, tokenCount } from "../spending.js";

const base = {
  responses: 2,
  totalTokens: 1_234,
  textIn: 210,
  cachedTextIn: 100,
  audioIn: 90,
  cachedAudioIn: 20,
  imageIn: 0,
  cachedImageIn: 0,
  textOut: 15,
  audioOut: 60,
  costUsd: 0.00512,
  model: "gpt-realtime",
  takenOn: "2025-08-28",
  free: false,
};

test("small amounts keep their cents: four decimals under a cent, three under a dollar", () => {
  assert.equal(dollars(0.00512), "$0.0051");
  assert.equal(dollars(0.25), "$0.250");
  assert.equal(dollars(12.345), "$12.35");
  assert.equal(dollars(-1), "$0.0000");
});

test("token counts read as people say them", () => {
  assert.equal(tokenCount(950), "950");
  assert.equal(tokenCount(1_234), "1.2k");
  assert.equal(tokenCount(34_400), "34k");
  assert.equal(tokenCount(1_500_000), "1.5M");
});

test("the line says the tokens and their cost, the demo's as what OpenAI would bill", () => {
  assert.equal(spendingLine(base), "1.2k tokens · $0.0051");
  assert.equal(
    spendingLine({ ...base, free: true }),
    "1.2k tokens · free ($0.0051 on gpt-realtime)",
  );
  assert.equal(spendingLine({ ...base, costUsd: null, model: null }), "1.2k tokens");
  assert.equal(spendingLine({ ...base, responses: 0, totalTokens: 0 }), "");
});

test("the details give the tokens by modality, the cached part, and whose prices of when", () => {
  const details = spendingDetails(base);
  assert.match(details, /^In: 210 \(100 cached\) text, 90 \(20 cached\) audio$/m);
  assert.match(details, /^Out: 15 text, 60 audio$/m);
  assert.match(details, /2 replies in this conversation/);
  assert.match(details, /gpt-realtime's prices as published on 2025-08-28/);
  assert.match(spendingDetails({ ...base, costUsd: null }), /No published prices/);
});

test("the element is hidden until something was billed, and shown after", () => {
  const element = { textContent: "", title: "", hidden: true };
  const spending = createSpending(element);
  spending.show({ ...base, responses: 0, totalTokens: 0 });
  assert.equal(element.hidden, true);
  spending.show(base);
  assert.equal(element.hidden, false);
  assert.equal(element.textContent, "1.2k tokens · $0.0051");
  spending.show({ ...base, responses: 0, totalTokens: 0 });
  assert.equal(element.hidden, true, "a new conversation starts with nothing shown");
});

test("the line's holder is what hides while there is nothing to show", () => {
  const element = { textContent: "", title: "", hidden: false };
  const holder = { hidden: true };
  const spending = createSpending(element, holder);
  spending.show(base);
  assert.equal(holder.hidden, false);
  assert.equal(element.hidden, false, "the line itself is left shown");
  assert.equal(element.textContent, "1.2k tokens · $0.0051");
  spending.show({ ...base, responses: 0, totalTokens: 0 });
  assert.equal(holder.hidden, true);
});

const transcribed = {
  ...base,
  costUsd: 0.00512 + 0.0085,
  transcribedSeconds: 30,
  transcriptionCostUsd: 0.0085,
  transcriptionModel: "gpt-realtime-whisper",
  transcriptionTakenOn: "2026-12-04",
  lastCachedShare: 0.5,
  cachedShare: 0.4,
};

test("speech billed by the minute shows in the line beside the tokens, in the one cost", () => {
  assert.equal(spendingLine(transcribed), "1.2k tokens · 30 s transcribed · $0.014");
  assert.equal(spendingLine({ ...transcribed, transcribedSeconds: 125.4 }), "1.2k tokens · 2 min 05 s transcribed · $0.014");
  assert.equal(spendingLine({ ...transcribed, transcribedSeconds: 1.2 }), "1.2k tokens · 1 s transcribed · $0.014");
  assert.equal(
    spendingLine({ ...transcribed, responses: 0, totalTokens: 0 }),
    "30 s transcribed · $0.014",
    "a transcription billed before the first reply is already shown",
  );
});

test("the details say what the speech cost at whose per-minute price, and the cached share", () => {
  const details = spendingDetails(transcribed);
  assert.match(
    details,
    /^Your speech: 30 s transcribed, \$0\.0085 at gpt-realtime-whisper's per-minute price as published on 2026-12-04\.$/m,
  );
  assert.match(details, /^Cached input: 50 % of the last reply's, 40 % over the conversation$/m);
  assert.match(
    spendingDetails({ ...transcribed, transcriptionCostUsd: null, transcriptionModel: null }),
    /^Your speech: 30 s transcribed; no per-minute price for its model, so not in the cost\.$/m,
  );
  assert.doesNotMatch(spendingDetails(base), /Your speech|Cached input/);
});

test("a GPT-Live conversation is told by its live and paused time and their cost", () => {
  const live = {
    ...base,
    responses: 0,
    totalTokens: 0,
    costUsd: 0.0951,
    model: "gpt-live-1.1",
    takenOn: "2026-12-06",
    activeSeconds: 90,
    pausedSeconds: 60,
  };
  assert.equal(spendingLine(live), "1 min 30 s live + 1 min 00 s paused · $0.095");
  assert.equal(spendingLine({ ...live, pausedSeconds: 0 }), "1 min 30 s live · $0.095");
  assert.match(spendingDetails(live), /GPT-Live: 90 s live, 60 s paused, at gpt-live-1\.1's per-minute prices\./);
  assert.equal(spendingLine({ ...live, activeSeconds: 0, pausedSeconds: 0 }), "");
});
