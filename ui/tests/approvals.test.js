import { test } from "node:test";
import assert from "node:assert/strict";
import { approvalSentence } from "../approvals.js";

test("a tool call's card names the tool and where it runs, and says what silence means", () => {
  assert.equal(
    approvalSentence({ title: "echo, on test", timeoutSeconds: 60 }),
    "The assistant wants to use echo, on test. Allow it? Unanswered in 60 s, it is denied.",
  );
});
