#!/usr/bin/env bash
# Installs a Walkie .deb on this machine (apt resolves its dependencies) and checks that the
# installed binary opens its window under a virtual display.
#
#   scripts/check-package.sh path/to/walkie.deb
set -euo pipefail
package=$(cd "$(dirname "${1:?usage: $0 package.deb}")" && pwd)/$(basename "$1")
sudo=()
if [ "$(id -u)" -ne 0 ]; then sudo=(sudo); fi

DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq --reinstall \
  -o DPkg::Lock::Timeout=600 "$package" >/dev/null
installed=$(dpkg -L walkie | grep -E '^/usr/bin/walkie$')
# The menu's entry is named after the app id (src-tauri/portal.rs: newer desktop portals look
# it up by that name); the bundler's own, named after the product, is hidden from menus.
desktop=/usr/share/applications/app.walkie.desktop.desktop
dpkg -L walkie | grep -qx "$desktop" ||
  { echo "check-package: the package has no $desktop" >&2; exit 1; }
if grep -qx 'NoDisplay=true' "$desktop"; then
  echo "check-package: $desktop is hidden from menus" >&2
  exit 1
fi
for entry in $(dpkg -L walkie | grep -E '^/usr/share/applications/.*\.desktop$'); do
  if [ "$entry" != "$desktop" ] && ! grep -qx 'NoDisplay=true' "$entry"; then
    echo "check-package: $entry would be a second Walkie in the menus" >&2
    exit 1
  fi
done

# Run it on a private display; the window's title is "Walkie".
xvfb-run -a -s "-screen 0 1280x800x24" bash -c '
  "$1" &
  app=$!
  trap "kill $app 2>/dev/null; wait $app 2>/dev/null" EXIT
  # xdotool exits on an X error when a window it is inspecting vanishes meanwhile (WebKit
  # opens and closes helper windows at start-up); search again until the app exits.
  until xdotool search --sync --onlyvisible --name "^Walkie$" >/dev/null 2>&1; do
    if ! kill -0 "$app" 2>/dev/null; then
      echo "check-package: the installed $1 exited before it opened a window" >&2
      exit 1
    fi
  done
  echo "check-package: the installed $1 opened its window"
' check "$installed" &
checker=$!
# xdotool --sync waits forever; bound the whole check.
( sleep 60 && kill "$checker" 2>/dev/null ) &
watchdog=$!
status=0
wait "$checker" || status=$?
if [ "$status" -gt 128 ]; then
  echo "check-package: the installed app did not open a window within 60 s" >&2
fi
kill "$watchdog" 2>/dev/null || true
exit $status
