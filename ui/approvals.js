// The cards of tool calls that ask first: what the assistant wants to run and with what, and
// Allow / Deny. Rust decides when a card shows and closes (a decision, its time running out,
// the call ending); a click only sends the decision. Until then the assistant says nothing.

/**
 * The card's sentence for a call.
 * @param {{ title: string, timeoutSeconds: number }} approval
 */
export function approvalSentence(approval) {
  return `The assistant wants to use ${approval.title}. Allow it? Unanswered in ${approval.timeoutSeconds} s, it is denied.`;
}

/**
 * Wires the cards' container.
 * @param {HTMLElement} container
 * @param {{ decide: (callId: string, allowed: boolean) => Promise<unknown>, report: (error: unknown) => void }} app
 */
export function createApprovals(container, { decide, report }) {
  const doc = container.ownerDocument;
  const cards = new Map();

  function show(approval) {
    if (cards.has(approval.callId)) return;
    const card = doc.createElement("section");
    card.className = "approval";
    card.setAttribute("role", "group");
    card.setAttribute("aria-label", `Tool call: ${approval.title}`);
    const sentence = doc.createElement("p");
    sentence.textContent = approvalSentence(approval);
    const args = doc.createElement("pre");
    args.className = "approval-arguments";
    args.textContent = approval.arguments;
    const allow = doc.createElement("button");
    allow.type = "button";
    allow.className = "primary";
    allow.textContent = "Allow";
    const deny = doc.createElement("button");
    deny.type = "button";
    deny.className = "quiet";
    deny.textContent = "Deny";
    for (const [button, allowed] of [
      [allow, true],
      [deny, false],
    ]) {
      button.addEventListener("click", () => {
        allow.disabled = true;
        deny.disabled = true;
        decide(approval.callId, allowed).catch((error) => {
          allow.disabled = false;
          deny.disabled = false;
          report(error);
        });
      });
    }
    const actions = doc.createElement("div");
    actions.className = "approval-actions";
    actions.append(allow, deny);
    card.append(sentence, args, actions);
    container.append(card);
    container.hidden = false;
    cards.set(approval.callId, card);
    // The focus stays where the user has it: an Enter meant for the message field, or a Space
    // meant to talk, must never answer the card. The container is a live region, so the card is
    // heard; Tab reaches its buttons.
  }

  function close(callId) {
    const card = cards.get(callId);
    if (!card) return;
    const hadFocus = card.contains(doc.activeElement);
    card.remove();
    cards.delete(callId);
    container.hidden = cards.size === 0;
    if (hadFocus) (container.querySelector("button") ?? doc.getElementById("compose-text"))?.focus();
  }

  return { show, close };
}
