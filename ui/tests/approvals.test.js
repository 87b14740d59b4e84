import { test } from "node:test";
import assert from "node:assert/strict";
import { approvalSentence, createApprovals } from "../approvals.js";

test("a tool call's card names the tool and where it runs, and says what silence means", () => {
  assert.equal(
    approvalSentence({ title: "echo, on test", timeoutSeconds: 60 }),
    "The assistant wants to use echo, on test. Allow it? Unanswered in 60 s, it is denied.",
  );
});

/** The few DOM calls the cards make, and which element has the focus. */
function fakeDocument() {
  const doc = { activeElement: null, getElementById: () => null };
  doc.createElement = (tagName) => {
    const element = {
      tagName,
      children: [],
      listeners: {},
      setAttribute() {},
      append(...children) {
        element.children.push(...children);
      },
      addEventListener(type, listener) {
        element.listeners[type] = listener;
      },
      focus() {
        doc.activeElement = element;
      },
      contains: (other) => element === other || element.children.includes(other),
      remove() {},
      querySelector: () => null,
    };
    return element;
  };
  return doc;
}

test("a card that shows leaves the focus where the user has it", () => {
  const doc = fakeDocument();
  const container = doc.createElement("div");
  container.ownerDocument = doc;
  const field = doc.createElement("textarea");
  field.focus();
  const decided = [];
  const approvals = createApprovals(container, {
    decide: async (callId, allowed) => decided.push([callId, allowed]),
    report: () => {},
  });
  approvals.show({ callId: "call_1", title: "echo, on test", arguments: "{}", timeoutSeconds: 60 });
  assert.equal(container.children.length, 1, "the card shows");
  assert.equal(doc.activeElement, field, "the message field keeps the focus");
  assert.deepEqual(decided, [], "nothing is answered until the user acts");
});
