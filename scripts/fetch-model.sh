#!/usr/bin/env bash
# fetch-model.sh NAME: download a whisper.cpp ggml model into
# $XDG_DATA_HOME/yazses/models (default ~/.local/share/yazses/models).
#
# Each file is checked against the SHA-1 that whisper.cpp 1.9.1 publishes in
# models/README.md. An interrupted download resumes from its .part file;
# only a verified file is renamed into place, atomically.
#
#   scripts/fetch-model.sh base.en        # the default model of yazsesd
#   scripts/fetch-model.sh --list         # names, sizes
#   YAZ_MODEL_URL=https://mirror/ggml-base.en.bin scripts/fetch-model.sh base.en
set -euo pipefail

base_url=${YAZ_MODEL_BASE_URL:-https://huggingface.co/ggerganov/whisper.cpp/resolve/main}
dir=${YAZ_MODEL_DIR:-${XDG_DATA_HOME:-$HOME/.local/share}/yazses/models}

# name size sha1 (from whisper.cpp v1.9.1 models/README.md)
table='
tiny       75MiB  bd577a113a864445d4c299885e0cb97d4ba92b5f
tiny.en    75MiB  c78c86eb1a8faa21b369bcd33207cc90d64ae9df
base       142MiB 465707469ff3a37a2b9b8d8f89f2f99de7299dac
base.en    142MiB 137c40403d78fd54d454da0f9bd998f78703390c
small      466MiB 55356645c2b361a969dfd0ef2c5a50d530afd8d5
small.en   466MiB db8a495a91d927739e50b3fc1cc4c6b8f6c2d022
medium     1.5GiB fd9727b6e1217c2f614f9b698455c4ffd82463b4
medium.en  1.5GiB 8c30f0e44ce9560643ebd10bbe50cd20eafd3723
large-v3-turbo 1.5GiB 4af2b29d7ec73d781377bfd1758ca957a807e941
'

die() { printf 'fetch-model: %s\n' "$*" >&2; exit "${2:-1}"; }
usage() {
  echo "usage: fetch-model.sh NAME | --list" >&2
  echo "names: $(echo "$table" | awk 'NF {printf "%s ", $1}')" >&2
  exit 2
}

[ $# -eq 1 ] || usage
case $1 in
  -h|--help) usage ;;
  --list) echo "$table" | awk 'NF {printf "%-16s %8s  ggml-%s.bin\n", $1, $2, $1}'; exit 0 ;;
esac
name=$1
line=$(echo "$table" | awk -v n="$name" '$1 == n')
[ -n "$line" ] || { echo "fetch-model: unknown model '$name'" >&2; usage; }
sha1=$(echo "$line" | awk '{print $3}')
file="ggml-$name.bin"
url=${YAZ_MODEL_URL:-$base_url/$file}
dest="$dir/$file"

check() { [ "$(sha1sum "$1" | cut -d' ' -f1)" = "$sha1" ]; }

if [ -f "$dest" ]; then
  check "$dest" && { echo "$dest"; exit 0; }
  die "$dest exists but its checksum is wrong; remove it and run again"
fi
command -v curl >/dev/null || die "curl is missing (apt install curl)"
mkdir -p "$dir"
part="$dest.part"
echo "fetch-model: downloading $file ($(echo "$line" | awk '{print $2}')) to $dir" >&2
progress=--progress-bar
[ -t 2 ] || progress=--silent
if ! curl --fail --location --show-error $progress --connect-timeout 15 \
     --continue-at - --output "$part" "$url"; then
  [ -s "$part" ] || rm -f "$part"
  die "download of $url failed (offline? behind a proxy?); run again to resume what was fetched, or copy a $file you have into $dir"
fi
if ! check "$part"; then
  mv -f "$part" "$part.bad"
  die "checksum mismatch for $file (want sha1 $sha1); the download was moved to $part.bad"
fi
mv -f "$part" "$dest"
echo "$dest"
