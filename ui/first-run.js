// The first thing a newcomer reads: while Walkie talks to its offline demo (no key yet), the
// empty transcript explains what the demo is, what a real assistant costs and where the audio
// goes, and offers the two ways on. Dismissed once, it stays away.

export const DISMISSED_KEY = "walkie.demoCardDismissed";

/**
 * Whether calls go to the offline demo: chosen outright, or "automatic" with no OpenAI key
 * saved or in the environment.
 * @param {{ settings: { provider: string }, keys?: Array<{ account: string, source: string }> }} view
 */
export function usesTheDemo(view) {
  if (view.settings.provider === "local") return true;
  if (view.settings.provider !== "automatic") return false;
  const openai = view.keys?.find((key) => key.account === "openai");
  return !openai || (openai.source !== "keyring" && openai.source !== "environment");
}

/**
 * Fills the transcript's empty placeholder with the demo card, wired to its two buttons.
 * @param {Element} placeholder the transcript's `.empty` element
 * @param {{ addKey: () => void, keepDemo: () => void }} actions
 */
export function showDemoCard(placeholder, actions) {
  const doc = placeholder.ownerDocument;
  const element = (tag, text, attributes = {}) =>
    Object.assign(doc.createElement(tag), { textContent: text }, attributes);
  const addKey = element("button", "Add an OpenAI key", { type: "button", className: "primary" });
  const keepDemo = element("button", "Keep trying the demo", { type: "button", className: "quiet" });
  const buttons = element("div", "", { className: "row" });
  buttons.append(addKey, keepDemo);
  placeholder.classList.add("first-run");
  placeholder.setAttribute("role", "region");
  placeholder.setAttribute("aria-label", "Getting started");
  placeholder.replaceChildren(
    element("h2", "You are talking to the offline demo"),
    element(
      "p",
      "It cannot understand speech: it plays back what you say, so you can check your microphone and speaker.",
    ),
    element(
      "p",
      "For a real assistant, add an OpenAI API key. OpenAI bills its use to your account; while a call is open your voice goes to OpenAI. Every conversation is also saved on this computer (History).",
    ),
    buttons,
  );
  addKey.addEventListener("click", actions.addKey);
  keepDemo.addEventListener("click", () => {
    placeholder.classList.remove("first-run");
    placeholder.removeAttribute("role");
    placeholder.removeAttribute("aria-label");
    placeholder.replaceChildren("Both sides of the conversation appear here.");
    actions.keepDemo();
  });
}
