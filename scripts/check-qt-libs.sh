#!/usr/bin/env bash
# Before the window opens on X11: name the system libraries Qt's xcb platform plugin needs and
# this machine lacks, with the packages that hold them (Debian/Ubuntu names), instead of Qt's
# generic "could not load the Qt platform plugin xcb". Exits 1 when some are missing.
# Checked only when Qt would pick xcb: DISPLAY set, no QT_QPA_PLATFORM, no Wayland session.
# SPECCHAT_QXCB (the plugin) and SPECCHAT_LDD (the ldd command) exist for the tests.
set -uo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

[ "$(uname -s)" = Linux ] || exit 0
[ -n "${DISPLAY:-}" ] || exit 0
[ -z "${QT_QPA_PLATFORM:-}" ] || exit 0
[ -z "${WAYLAND_DISPLAY:-}" ] || exit 0

plugin="${SPECCHAT_QXCB:-}"
if [ -z "$plugin" ]; then
  for candidate in "$root"/.venv/lib/python3*/site-packages/PySide6/Qt/plugins/platforms/libqxcb.so; do
    [ -f "$candidate" ] && plugin="$candidate"
  done
fi
[ -n "$plugin" ] || exit 0
ldd_command="${SPECCHAT_LDD:-ldd}"
command -v "$ldd_command" >/dev/null 2>&1 || exit 0

missing="$("$ldd_command" "$plugin" 2>/dev/null | awk '/not found/ {print $1}' | sort -u)"
[ -n "$missing" ] || exit 0

package_of() {
  case "$1" in
    libxcb-cursor.so.0) echo libxcb-cursor0 ;;
    libxcb-icccm.so.4) echo libxcb-icccm4 ;;
    libxcb-keysyms.so.1) echo libxcb-keysyms1 ;;
    libxcb-image.so.0) echo libxcb-image0 ;;
    libxcb-render-util.so.0) echo libxcb-render-util0 ;;
    libxcb-xkb.so.1) echo libxcb-xkb1 ;;
    libxkbcommon-x11.so.0) echo libxkbcommon-x11-0 ;;
    libxkbcommon.so.0) echo libxkbcommon0 ;;
    libxcb-shape.so.0) echo libxcb-shape0 ;;
    libxcb-randr.so.0) echo libxcb-randr0 ;;
    libxcb-xinerama.so.0) echo libxcb-xinerama0 ;;
    libxcb-sync.so.1) echo libxcb-sync1 ;;
    libxcb-xfixes.so.0) echo libxcb-xfixes0 ;;
    libxcb-shm.so.0) echo libxcb-shm0 ;;
    libxcb-render.so.0) echo libxcb-render0 ;;
    libxcb-util.so.1) echo libxcb-util1 ;;
    libX11-xcb.so.1) echo libx11-xcb1 ;;
    libfontconfig.so.1) echo libfontconfig1 ;;
    libEGL.so.1) echo libegl1 ;;
    libGL.so.1) echo libgl1 ;;
    libdbus-1.so.3) echo libdbus-1-3 ;;
    *) echo "" ;;
  esac
}

packages=""
unknown=""
for lib in $missing; do
  package="$(package_of "$lib")"
  if [ -n "$package" ]; then packages="$packages $package"; else unknown="$unknown $lib"; fi
done
{
  echo "specchat: the window cannot open on X11: Qt's xcb platform plugin needs system libraries this machine lacks:"
  for lib in $missing; do echo "  $lib"; done
  if [ -n "$packages" ]; then
    echo "Install them (Debian/Ubuntu):  sudo apt-get install$packages"
  fi
  if [ -n "$unknown" ]; then
    echo "Find the package holding:$unknown (on Debian/Ubuntu: apt-file search NAME)"
  fi
  echo "(The command line needs none of them: ./run.sh generate|compare|bench ...)"
} >&2
exit 1
