// Input outlines in the settings dialog must stand out from the dialog (WCAG 1.4.11: 3:1),
// in both colour schemes. The colours are read from style.css's custom properties.
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";

const css = readFileSync(new URL("../style.css", import.meta.url), "utf8");

/** The custom properties set in `:root` blocks, outside (light) or inside (dark) the dark media query. */
function properties(scheme) {
  const found = {};
  const darkStart = /@media \(prefers-color-scheme: dark\)\s*\{/g;
  const darkRanges = [];
  for (const match of css.matchAll(darkStart)) {
    // The media block ends at the first "}" on a line of its own after its :root block.
    const end = css.indexOf("\n}", match.index);
    darkRanges.push([match.index, end]);
  }
  for (const block of css.matchAll(/:root\s*\{([^}]*)\}/g)) {
    const dark = darkRanges.some(([start, end]) => block.index > start && block.index < end);
    if (dark !== (scheme === "dark")) continue;
    for (const [, name, value] of block[1].matchAll(/(--[\w-]+):\s*([^;]+);/g)) found[name] = value.trim();
  }
  return found;
}

function luminance(hex) {
  const channels = [1, 3, 5].map((start) => parseInt(hex.slice(start, start + 2), 16) / 255);
  const [r, g, b] = channels.map((v) => (v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4));
  return 0.2126 * r + 0.7152 * g + 0.0722 * b;
}

function contrast(a, b) {
  const [light, dark] = [luminance(a), luminance(b)].sort((x, y) => y - x);
  return (light + 0.05) / (dark + 0.05);
}

test("the contrast formula gives WCAG's known values", () => {
  assert.equal(contrast("#000000", "#ffffff").toFixed(1), "21.0");
  assert.equal(contrast("#777777", "#ffffff").toFixed(2), "4.48");
});

for (const scheme of ["light", "dark"]) {
  test(`settings input outlines have 3:1 contrast with the dialog and the field (${scheme})`, () => {
    const colours = { ...properties("light"), ...(scheme === "dark" ? properties("dark") : {}) };
    const outline = colours["--field-line"];
    assert.match(outline ?? "", /^#[0-9a-f]{6}$/i, "--field-line is a hex colour");
    for (const behind of ["--surface", "--bg"]) {
      const ratio = contrast(outline, colours[behind]);
      assert.ok(ratio >= 3, `${outline} on ${behind} ${colours[behind]}: ${ratio.toFixed(2)}:1`);
    }
  });
}

test("the settings inputs use the outline colour that is checked", () => {
  const rule = css.match(/\.settings-form input:not\(\[type="checkbox"\]\),[^{]*\{([^}]*)\}/);
  assert.ok(rule, "the settings input rule exists");
  assert.match(rule[1], /border: 1px solid var\(--field-line\)/);
});
