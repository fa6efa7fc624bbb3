#!/usr/bin/env sh
# Installs (or with --uninstall removes) the Reins menu entry and icons for this user.
# Run it from the unpacked bundle folder; the folder must stay where it is afterwards,
# because the menu entry points at the `reins` executable inside it.
#   ./install-linux.sh               add Reins to the applications menu
#   ./install-linux.sh --uninstall   remove the entry and icons again
# Files go under ${XDG_DATA_HOME:-~/.local/share}/applications and .../icons/hicolor.
set -eu

here=$(cd "$(dirname "$0")" && pwd -P)
data_home=${XDG_DATA_HOME:-"$HOME/.local/share"}
apps="$data_home/applications"
icons="$data_home/icons/hicolor"
sizes="16 24 32 48 64 128 256 512"

refresh() {
  command -v update-desktop-database >/dev/null 2>&1 && update-desktop-database -q "$apps" || true
  command -v gtk-update-icon-cache >/dev/null 2>&1 && gtk-update-icon-cache -q -t "$icons" || true
}

if [ "${1:-}" = "--uninstall" ]; then
  rm -f "$apps/reins.desktop" "$icons/scalable/apps/reins.svg"
  for s in $sizes; do rm -f "$icons/${s}x${s}/apps/reins.png"; done
  refresh
  echo "Reins menu entry and icons removed from $data_home"
  exit 0
fi
if [ $# -gt 0 ]; then
  echo "usage: $0 [--uninstall]" >&2
  exit 2
fi

exe="$here/reins"
res="$here/resources"
if [ ! -x "$exe" ] || [ ! -f "$res/reins.desktop.in" ]; then
  echo "install-linux.sh: run me from the unpacked Reins folder (no reins executable or" \
       "resources/ next to me in $here)" >&2
  exit 1
fi
# The Exec key is quoted; these characters would need escaping rules we refuse to guess at.
case "$exe" in
  *'"'* | *'`'* | *'$'* | *'\'* | *'%'*)
    echo "install-linux.sh: the folder path $here contains one of \" \` \$ \\ %;" \
         "move the folder somewhere plainer and run me again" >&2
    exit 1 ;;
esac

mkdir -p "$apps" "$icons/scalable/apps"
for s in $sizes; do
  mkdir -p "$icons/${s}x${s}/apps"
  cp "$res/icons/reins-$s.png" "$icons/${s}x${s}/apps/reins.png"
done
cp "$res/icons/reins.svg" "$icons/scalable/apps/reins.svg"
# The path may hold | or &, which sed would read as its own syntax: escape them.
esc=$(printf '%s' "$exe" | sed 's/[|&]/\\&/g')
sed -e "s|@EXEC@|\"$esc\"|" -e "s|@TRYEXEC@|$esc|" "$res/reins.desktop.in" > "$apps/reins.desktop.tmp"
mv "$apps/reins.desktop.tmp" "$apps/reins.desktop"
chmod 644 "$apps/reins.desktop"
refresh
echo "Reins installed: $apps/reins.desktop -> $exe"
