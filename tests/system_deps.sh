#!/usr/bin/env bash
# Installs the system packages the test suite needs, when it can (root with apt-get),
# and says clearly what is missing when it cannot. It never fails the build by itself:
# the tests that need a missing package fail with their own message.
set -u
need=()
command -v bwrap >/dev/null 2>&1 || need+=(bubblewrap)
command -v pasta >/dev/null 2>&1 || need+=(passt)                   # commands' internet
command -v xvfb-run >/dev/null 2>&1 || need+=(xvfb)
command -v objdump >/dev/null 2>&1 || need+=(binutils)              # PyInstaller on Linux
command -v desktop-file-validate >/dev/null 2>&1 || need+=(desktop-file-utils)
command -v setsid >/dev/null 2>&1 || need+=(util-linux)              # the lifetime tests

# Qt's xcb platform plugin (used under xvfb) needs these shared libraries.
for lib in libxcb-cursor.so.0 libxkbcommon-x11.so.0 libEGL.so.1 libGL.so.1; do
  if ! ldconfig -p 2>/dev/null | grep -q "$lib"; then
    case "$lib" in
      libxcb-cursor.so.0) need+=(libxcb-cursor0) ;;
      libxkbcommon-x11.so.0) need+=(libxkbcommon-x11-0) ;;
      libEGL.so.1) need+=(libegl1) ;;
      libGL.so.1) need+=(libgl1) ;;
    esac
  fi
done
command -v node >/dev/null 2>&1 || need+=(nodejs)                  # MCP test servers (npm)
command -v npm >/dev/null 2>&1 || need+=(npm)
cache_npm_servers() {  # the MCP tests' npm server, cached once (they skip, saying why, without)
  [ -x .venv/bin/python ] && .venv/bin/python -m tests.mcp.everything || true
}
if [ ${#need[@]} -eq 0 ]; then cache_npm_servers; exit 0; fi
extra=(libxcb-icccm4 libxcb-keysyms1 libxcb-image0 libxcb-render-util0 libxcb-shape0
       libxcb-xinerama0 libxcb-randr0 libdbus-1-3 fonts-dejavu-core xauth)
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
  echo "system-deps: installing ${need[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -q >/dev/null 2>&1 || true
  if ! apt-get install -y -q "${need[@]}" "${extra[@]}" >/dev/null 2>&1; then
    echo "system-deps: apt-get install failed for: ${need[*]}" >&2
  fi
else
  echo "system-deps: missing ${need[*]} (run as root with apt-get, or install them by hand);" \
       "tests that need them will fail and say so" >&2
fi
cache_npm_servers
exit 0
