#!/usr/bin/env bash
# Writes the fuzzers' starting corpora to fuzz/seeds/<target>/, one input per file, from every
# fixture in the repository (nothing here is committed but the curated fuzz/regressions/):
#   server_event  each line of crates/openai/tests/data/*.jsonl, every JSON literal in the
#                 openai and local-provider tests, and fuzz/regressions/server_event/
#   client_event  every JSON literal in the same tests, and fuzz/regressions/client_event/
#   sdp_answer    fuzz/regressions/sdp_answer/ (an answer the local provider really sent, the
#                 offer Walkie made for it, and a Location path)
#   agui          each case of the AG-UI conformance files as a JSON array and as JSON lines
#   journal       the journal the store's scripted-conversation fixture writes, whole and cut
#                 into pieces, and fuzz/regressions/journal/
# Usage: fuzz/seeds.sh   (builds store-writer-fixture through the shared build lock)
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
out=fuzz/seeds
shared=${WALKIE_SHARED:-/work/shared}
rm -rf "$out"
mkdir -p "$out"/{server_event,client_event,sdp_answer,agui,journal}

for target in server_event client_event sdp_answer agui journal; do
    if compgen -G "fuzz/regressions/$target/*" > /dev/null; then
        cp fuzz/regressions/"$target"/* "$out/$target/"
    fi
done

python3 - "$out" "$shared" <<'PY'
import glob, json, os, re, sys
out, shared = sys.argv[1], sys.argv[2]

def write(target, name, text):
    with open(os.path.join(out, target, name), "w", encoding="utf-8") as f:
        f.write(text)

n = 0
for path in sorted(glob.glob("crates/openai/tests/data/*.jsonl")):
    base = os.path.basename(path).removesuffix(".jsonl")
    with open(path, encoding="utf-8") as f:
        for number, line in enumerate(f, 1):
            if line.strip():
                write("server_event", f"{base}-{number:03}.json", line.rstrip("\n"))
                n += 1

# Raw string literals holding JSON objects in the tests of the crates that speak the protocol.
literal = re.compile(r'r#"(\{.*?)"#', re.S)
sources = glob.glob("crates/openai/tests/*.rs") + glob.glob("crates/openai/src/*.rs") \
    + glob.glob("crates/local-provider/**/*.rs", recursive=True)
seen = set()
for path in sorted(sources):
    for text in literal.findall(open(path, encoding="utf-8").read()):
        if text in seen:
            continue
        seen.add(text)
        name = f"literal-{len(seen):04}.json"
        write("server_event", name, text)
        write("client_event", name, text)

cases = 0
files = {}  # the crate keeps a copy of the shared conformance file: read each text once
for path in sorted(glob.glob(os.path.join(shared, "conformance", "*.json"))
                   + glob.glob("crates/agui/tests/conformance/*.json")):
    files.setdefault(open(path, encoding="utf-8").read(), path)
for text in files:
    for case in json.loads(text):
        events = case.get("events")
        if not isinstance(events, list):
            continue
        cases += 1
        name = re.sub(r"[^A-Za-z0-9_-]", "_", str(case.get("name", cases)))[:60]
        write("agui", f"{name}.json", json.dumps(events, ensure_ascii=False))
        write("agui", f"{name}.jsonl", "\n".join(json.dumps(e, ensure_ascii=False) for e in events))
print(f"seeds: {n} server-event lines, {len(seen)} JSON literals, {cases} AG-UI cases")
PY

# A real journal: the store's scripted conversation, recorded by the store itself.
journal_root=$(mktemp -d)
trap 'rm -rf "$journal_root"' EXIT
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$root/target}
cargo build -q -p walkie-store --bin store-writer-fixture
"$CARGO_TARGET_DIR"/debug/store-writer-fixture "$journal_root" > /dev/null
journal=$(find "$journal_root" -name journal.jsonl | head -1)
cp "$journal" "$out/journal/scripted-conversation.jsonl"
# Every record on its own and the first k records, so small inputs reach each record type.
lines=$(wc -l < "$journal")
for k in $(seq 1 "$lines"); do
    sed -n "${k}p" "$journal" > "$out/journal/record-$(printf %03d "$k").jsonl"
done
for k in 2 5 10 20; do
    [ "$k" -lt "$lines" ] && head -n "$k" "$journal" > "$out/journal/first-$k.jsonl"
done
# A torn tail: the last line cut in half.
head -c "$(( $(wc -c < "$journal") - 40 ))" "$journal" > "$out/journal/torn-tail.jsonl"

# Dictionaries: the keys and short strings of each target's seeds (event type names, field
# names, roles), and the line prefixes of the SDP seeds; afl-fuzz gets them with -x.
python3 - "$out" <<'PY'
import glob, json, os, re, sys
out = sys.argv[1]

def afl_entry(token):
    # AFL dictionary syntax: printable ASCII as is, `\\` and `\"` escaped, other bytes as \xNN.
    body = "".join(chr(b) if 32 <= b < 127 and b not in (34, 92) else f"\\x{b:02x}"
                   for b in token.encode("utf-8"))
    return f'kw="{body}"\n'

def tokens_of(value, found):
    if isinstance(value, dict):
        for key, item in value.items():
            found.add(json.dumps(key))
            tokens_of(item, found)
    elif isinstance(value, list):
        for item in value:
            tokens_of(item, found)
    elif isinstance(value, str) and 0 < len(value) <= 40:
        found.add(json.dumps(value))

for target in ["server_event", "client_event", "agui", "journal"]:
    found = set()
    for path in glob.glob(os.path.join(out, target, "*")):
        for line in open(path, encoding="utf-8", errors="replace").read().splitlines() or [""]:
            try:
                tokens_of(json.loads(line), found)
            except ValueError:
                pass
        try:
            tokens_of(json.load(open(path, encoding="utf-8")), found)
        except ValueError:
            pass
    write_dict = [t for t in sorted(found) if len(t.encode()) <= 128]
    with open(os.path.join(out, f"{target}.dict"), "w", encoding="utf-8") as f:
        for token in write_dict:
            f.write(afl_entry(token))

prefixes = set()
for path in glob.glob(os.path.join(out, "sdp_answer", "*")):
    for line in open(path, encoding="utf-8", errors="replace").read().splitlines():
        match = re.match(r"^([a-z]=[^: ]*[: ]?)", line)
        if match:
            prefixes.add(match.group(1))
with open(os.path.join(out, "sdp_answer.dict"), "w", encoding="utf-8") as f:
    for token in sorted(prefixes) + ["\r\n", "IN IP4 ", "IN IP6 ", "UDP/TLS/RTP/SAVPF", "typ host"]:
        f.write(afl_entry(token))
PY

for target in server_event client_event sdp_answer agui journal; do
    printf '%-13s %5d files, %4d dictionary tokens\n' "$target" \
        "$(find "$out/$target" -type f | wc -l)" "$(wc -l < "$out/$target.dict")"
done
