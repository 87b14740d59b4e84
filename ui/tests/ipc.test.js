import { test } from "node:test";
import assert from "node:assert/strict";
import { readdirSync, readFileSync } from "node:fs";
import { COMMANDS, EVENTS } from "../ipc.js";

const uiFolder = new URL("../", import.meta.url);
/** Every module of the page but the contract itself, with its text. */
const modules = readdirSync(uiFolder)
  .filter((name) => name.endsWith(".js") && name !== "ipc.js")
  .map((name) => ({ name, text: readFileSync(new URL(name, uiFolder), "utf8") }));

test("no module of the page spells a command or an event name of its own", () => {
  assert.ok(modules.length > 10, "the page's modules were read");
  for (const { name, text } of modules) {
    assert.doesNotMatch(text, /invoke\(\s*["'`]/, `${name} invokes a command by a literal name`);
    assert.doesNotMatch(text, /["'`]walkie:\/\//, `${name} spells an event name`);
    // One-word names ("status", "connect") are also element ids; the rest are the shell's alone.
    for (const value of Object.values(COMMANDS).filter((command) => command.includes("_"))) {
      assert.doesNotMatch(
        text,
        new RegExp(`["'\`]${value}["'\`]`),
        `${name} spells the command ${value}`,
      );
    }
  }
});

test("every name the page uses is in the contract", () => {
  for (const { name, text } of modules) {
    for (const [, list, key] of text.matchAll(/\b(COMMANDS|EVENTS)\.(\w+)/g)) {
      const names = list === "COMMANDS" ? COMMANDS : EVENTS;
      assert.ok(Object.hasOwn(names, key), `${name} uses ${list}.${key}, which ui/ipc.js lacks`);
    }
  }
});

test("the contract names each command and each event once", () => {
  for (const names of [COMMANDS, EVENTS]) {
    const values = Object.values(names);
    assert.equal(new Set(values).size, values.length);
    assert.ok(Object.isFrozen(names));
  }
  assert.ok(Object.values(EVENTS).every((event) => event.startsWith("walkie://")));
});
