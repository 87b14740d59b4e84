#!/usr/bin/env bash
# Inspects a Walkie .rpm without installing it (these machines are Debian): that it is named
# walkie and holds the binary, its .desktop entry and its icons; that every library the binary
# links is required by its soname, as rpmbuild's own generator would require it (Fedora's
# packages provide those names: libopus.so.0()(64bit) is opus's, libpulse.so.0()(64bit)
# pulseaudio-libs'); and rpmlint's verdict, whose errors fail the check (scripts/rpmlint.toml
# names the few it filters, and why; its warnings are printed).
#
#   scripts/check-rpm.sh path/to/walkie.rpm
set -euo pipefail
package=$(realpath "${1:?usage: $0 package.rpm}")
config="$(dirname "$0")/rpmlint.toml"
fail() {
  echo "check-rpm: $*" >&2
  exit 1
}

name=$(rpm -qp --queryformat '%{NAME}' "$package")
[ "$name" = walkie ] || fail "the package is named $name, not walkie"
files=$(rpm -qpl "$package")
grep -qx /usr/bin/walkie <<<"$files" || fail "no /usr/bin/walkie in the package"
grep -qx '/usr/share/applications/app.walkie.desktop.desktop' <<<"$files" ||
  fail "no .desktop entry named after the app id"
grep -q '^/usr/share/icons/hicolor/' <<<"$files" || fail "no icons"

rpm -K "$package" >/dev/null || fail "its digests do not check out (rpm -K)"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# rpm2cpio 4.18 exits 1 on this package though its payload is whole (rpm -K checked it above):
# the binary extracted is what counts.
(cd "$work" && { rpm2cpio "$package" || true; } | cpio -idm --quiet ./usr/bin/walkie)
[ -x "$work/usr/bin/walkie" ] || fail "/usr/bin/walkie could not be read out of the package"
requires=$(rpm -qpR "$package")
needed=$(readelf -d "$work/usr/bin/walkie" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p')
[ -n "$needed" ] || fail "the packaged binary links no library: not the app?"
# The C runtime, and what WebKitGTK and GTK bring with them (the package requires both).
comes_along='^(libc|libm|libgcc_s|ld-linux-x86-64|libgdk-3|libgdk_pixbuf-2\.0|libcairo|libgobject-2\.0|libglib-2\.0|libgio-2\.0|libdbus-1|libsoup-3\.0|libjavascriptcoregtk-4\.1)\.so'
for soname in $needed; do
  grep -qE "$comes_along" <<<"$soname" && continue
  grep -qxF "$soname()(64bit)" <<<"$requires" ||
    fail "the binary links $soname, but the package does not require $soname()(64bit)"
done

status=0
report=$(rpmlint -c "$config" "$package" 2>&1) || status=$?
echo "$report" >&2
[ "$status" -eq 0 ] || fail "rpmlint found errors (exit $status)"
echo "check-rpm: $(rpm -qp --queryformat '%{NAME} %{VERSION}-%{RELEASE}.%{ARCH}' "$package"): the app, its entry and icons, a require for each library it links, no rpmlint error" >&2
