#!/usr/bin/env bash
# What the app needs from the system to show its window on Linux (Qt's xcb platform
# plugin and its libraries, a font) and to sandbox commands (bubblewrap; passt for a
# command allowed the network). `make run` calls it: as root with apt-get it installs what
# is missing; otherwise it prints the exact command to run, and the app starts anyway
# (Qt says what it lacks; without bubblewrap every command asks first).
set -u
[ "$(uname -s)" = Linux ] || exit 0
need=()
command -v bwrap >/dev/null 2>&1 || need+=(bubblewrap)
command -v pasta >/dev/null 2>&1 || need+=(passt)
libs=(libxcb-cursor.so.0:libxcb-cursor0 libxkbcommon-x11.so.0:libxkbcommon-x11-0
      libxcb-icccm.so.4:libxcb-icccm4 libxcb-keysyms.so.1:libxcb-keysyms1
      libxcb-image.so.0:libxcb-image0 libxcb-render-util.so.0:libxcb-render-util0
      libxcb-shape.so.0:libxcb-shape0 libxcb-xinerama.so.0:libxcb-xinerama0
      libxcb-randr.so.0:libxcb-randr0 libEGL.so.1:libegl1 libGL.so.1:libgl1
      libdbus-1.so.3:libdbus-1-3 libfontconfig.so.1:libfontconfig1)
known=$(ldconfig -p 2>/dev/null)
for pair in "${libs[@]}"; do
  grep -q "${pair%%:*}" <<<"$known" || need+=("${pair##*:}")
done
fc-list 2>/dev/null | grep -q . || need+=(fonts-dejavu-core)
[ ${#need[@]} -eq 0 ] && exit 0
command="apt-get install -y ${need[*]}"
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
  echo "make run: installing what the window and the sandbox need: ${need[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -q >/dev/null 2>&1 || true
  apt-get install -y -q "${need[@]}" >/dev/null 2>&1 \
    || echo "make run: this failed; run it yourself to see why: $command" >&2
elif command -v apt-get >/dev/null 2>&1; then
  echo "make run: Reins needs these system packages; install them with:" >&2
  echo "  sudo $command" >&2
else
  echo "make run: Reins needs the system packages that provide: ${need[*]}" \
       "(Debian/Ubuntu names; use your system's package manager)" >&2
fi
exit 0
