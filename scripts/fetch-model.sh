#!/usr/bin/env bash
# fetch-model.sh (installed as yaz-fetch-model): download a whisper.cpp ggml
# model, or the Silero voice-activity detector's model, into
# $XDG_DATA_HOME/yazses/models (default ~/.local/share/yazses/models).
#
# Each whisper model is checked against the SHA-1 that whisper.cpp 1.9.1
# publishes in models/README.md; the VAD model against its size and SHA-256.
# An interrupted download resumes from its .part file; only a verified file
# is renamed into place, atomically.
#
#   yaz-fetch-model base.en        # the default model of yazsesd
#   yaz-fetch-model silero-v5.1.2  # the voice-activity detector (864 KiB)
#   yaz-fetch-model silero-v6.2.0  # its newer version, the one the tests use
#   yaz-fetch-model --list         # names, sizes, and which are installed
#   YAZ_MODEL_URL=https://mirror/ggml-base.en.bin yaz-fetch-model base.en
#
# Exit status: 0 done (or already there), 1 download or checksum failure,
# 2 usage error.
#
# The Parakeet TDT entries (parakeet-*: NVIDIA's model converted for
# whisper.cpp, from the ggml-org/parakeet-GGUF repository on the model hub)
# are NOT pinned: no checksum of them could be looked up when this script
# was written. For those the script checks what the hub announces for the
# file (its size and the sha256 of its content, in the X-Linked-Size and
# X-Linked-Etag headers), that the file is a ggml model, and prints the
# sha256 of what it wrote so that you can compare it yourself.
set -euo pipefail

# Set by make install; empty in a checkout, where scripts/version.sh says it.
version=
prog=yaz-fetch-model

# The model hub; each model's repository is in the table. YAZ_MODEL_BASE_URL
# replaces https://huggingface.co/REPOSITORY/resolve/main for every model.
hub=https://huggingface.co
base_url=${YAZ_MODEL_BASE_URL:-}
dir=${YAZ_MODEL_DIR:-${XDG_DATA_HOME:-$HOME/.local/share}/yazses/models}

# name size checksum [repository bytes]
# The whisper models (repository ggerganov/whisper.cpp) with the SHA-1 that
# whisper.cpp v1.9.1 publishes in models/README.md; the Silero VAD model
# (repository ggml-org/whisper-vad, as whisper.cpp's
# models/download-vad-model.sh fetches it) with its exact size and SHA-256.
# silero-v6.2.0 is the model the tests use (make setup fetches it into their
# cache when no ../shared/models is beside the checkout). Its pin is the
# size and SHA-256 of the test asset this project has (whisper.cpp's own
# models/for-tests-silero-v6.2.0-ggml.bin); no network reached the hub when
# it was written, so that the hub's ggml-silero-v6.2.0.bin is the same
# bytes was NOT checked here (two public projects pin the hub's file to
# the same size and SHA-256). Should it differ, the download is refused
# with a checksum mismatch and kept aside as .part.bad.
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
silero-v5.1.2  864KiB 29940d98d42b91fbd05ce489f3ecf7c72f0a42f027e4875919a28fb4c04ea2cf ggml-org/whisper-vad 885098
silero-v6.2.0  864KiB 2aa269b785eeb53a82983a20501ddf7c1d9c48e33ab63a41391ac6c9f7fb6987 ggml-org/whisper-vad 885098
parakeet-tdt-0.6b-v3-f16  1.2GiB -
parakeet-tdt-0.6b-v3-q8_0 640MiB -
'
names=$(echo "$table" | awk 'NF {print $1}' | paste -sd ' ')
# Entries whose checksum column is "-" are not pinned (see above).
parakeet_url=${YAZ_PARAKEET_BASE_URL:-https://huggingface.co/ggml-org/parakeet-GGUF/resolve/main}

die() { printf '%s: %s\n' "$prog" "$1" >&2; exit "${2:-1}"; }
help() {
  cat <<EOH
usage: $prog NAME        download model NAME, verified, into $dir
       $prog --list      the models, their sizes, and which are installed
       $prog --help | --version

names: $names
The default model of yaz-decode and yazsesd is base.en; silero-v5.1.2 is
the Silero voice-activity detector's model; silero-v6.2.0, its newer
version, is the one the tests use (set vad.model to use it). The folder is
\$YAZ_MODEL_DIR, else \$XDG_DATA_HOME/yazses/models. YAZ_MODEL_URL fetches
NAME from another address, YAZ_MODEL_BASE_URL every model from a mirror (the
checksum is still checked).

parakeet-* are NVIDIA Parakeet TDT 0.6B v3 models (25 European languages)
converted for whisper.cpp, from $parakeet_url
(YAZ_PARAKEET_BASE_URL). They are NOT pinned: no checksum is known here.
The script checks the size and sha256 the hub announces for the file and
that it is a ggml model, and prints the sha256 of what it wrote.
EOH
}
# man_page prints the man page (roff; make install writes it as
# share/man/man1/yaz-fetch-model.1), with the names of the table.
man_page() {
  local v=$version date
  [ -n "$v" ] || v=$("$(dirname "$0")/version.sh" 2>/dev/null) || v=0.0.0-dev
  date=$(date -u ${SOURCE_DATE_EPOCH:+-d @$SOURCE_DATE_EPOCH} +%Y-%m-%d)
  cat <<EOM
.TH YAZ\-FETCH\-MODEL 1 "$date" "$prog $v" "YazSes manual"
.SH NAME
yaz\-fetch\-model \- download a whisper.cpp model or the Silero VAD model, verified
.SH SYNOPSIS
\fByaz\-fetch\-model\fR \fINAME\fR
.br
\fByaz\-fetch\-model\fR \fB\-\-list\fR | \fB\-\-help\fR | \fB\-\-version\fR
.SH DESCRIPTION
.PP
yaz\-fetch\-model downloads the model \fINAME\fR into the model folder and
prints the path of the file. Each whisper model is checked against the
SHA\-1 that whisper.cpp 1.9.1 publishes; the Silero voice\-activity
detector's models against their size and SHA\-256. An interrupted download
resumes from its .part file; only a verified file is renamed into place, at
once. A file already there is checked and kept; one whose checksum is wrong
is refused. A download that fails its check is kept aside as .part.bad.
.PP
The default model of yaz\-decode and yazsesd is base.en; silero\-v5.1.2 is
the Silero voice\-activity detector's model; silero\-v6.2.0, its newer
version, is the one the tests use (set vad.model to use it).
.PP
The parakeet\-* entries are NVIDIA Parakeet TDT 0.6B v3 models (25 European
languages) converted for whisper.cpp. They are \fBnot\fR pinned: no
checksum is known here. The script checks the size and SHA\-256 that the
model hub announces for the file and that it is a ggml model, and prints the
SHA\-256 of what it wrote, for you to compare.
.SH OPTIONS
.TP
\fINAME\fR
The model to fetch, one of: $(echo "$names" | sed 's/-/\\-/g').
.TP
\fB\-\-list\fR
The models, their sizes, and which are installed or partly downloaded.
.TP
\fB\-h\fR, \fB\-\-help\fR
A short help, and exit.
.TP
\fB\-\-version\fR
Print "$prog VERSION" and exit.
.SH EXIT STATUS
.PP
0 when the model is there (fetched now, or already); 1 on a download or
checksum failure; 2 on a usage error.
.SH ENVIRONMENT
.TP
\fBYAZ_MODEL_DIR\fR
The model folder, instead of \fB\$XDG_DATA_HOME/yazses/models\fR.
.TP
\fBYAZ_MODEL_URL\fR
Fetch \fINAME\fR from this address (the checksum is still checked).
.TP
\fBYAZ_MODEL_BASE_URL\fR
Fetch every model from this mirror, in place of the model hub's
https://huggingface.co/REPOSITORY/resolve/main.
.TP
\fBYAZ_PARAKEET_BASE_URL\fR
Where the parakeet\-* files come from.
.SH FILES
.TP
\fB\$XDG_DATA_HOME/yazses/models/ggml\-NAME.bin\fR
The models (XDG_DATA_HOME is ~/.local/share when it is not set), where
yaz\-decode, yazsesd and yaz\-mcp look for them.
.TP
\fBggml\-NAME.bin.part\fR, \fBggml\-NAME.bin.part.bad\fR
A download in progress (run again to resume), and one that failed its check.
.SH EXAMPLES
.PP
Fetch the default model and the voice\-activity detector's, then see what
is installed:
.PP
.RS 4
.nf
yaz\-fetch\-model base.en
yaz\-fetch\-model silero\-v5.1.2
yaz\-fetch\-model \-\-list
.fi
.RE
.PP
Fetch from a mirror:
.PP
.RS 4
.nf
YAZ_MODEL_BASE_URL=https://mirror.example/whisper yaz\-fetch\-model small.en
.fi
.RE
.SH SEE ALSO
.PP
\fByaz\-decode\fR(1), \fByazsesd\fR(1), \fByaz\-mcp\fR(1),
\fByaz\-capture\fR(1), \fByaz\-speak\fR(1), \fByaz\-type\fR(1), \fByaz\-gate\fR(1), and
README.md and docs/ in the source.
EOM
}
usage() { echo "$prog: $1" >&2; echo "usage: $prog NAME | --list | --help | --version" >&2; exit 2; }
show_version() {
  local v=$version
  if [ -z "$v" ]; then
    v=$("$(dirname "$0")/version.sh" 2>/dev/null) || v=0.0.0-dev
  fi
  echo "$prog $v"
}

[ $# -eq 1 ] || usage "want exactly one argument, got $#"
case $1 in
  -h|--help) help; exit 0 ;;
  --version) show_version; exit 0 ;;
  # For make install: the man page.
  --man) man_page; exit 0 ;;
  --list)
    echo "$table" | while read -r n size _; do
      [ -n "$n" ] || continue
      mark=""
      if [ -f "$dir/ggml-$n.bin" ]; then
        mark="installed"
      elif [ -f "$dir/ggml-$n.bin.part" ]; then
        mark="partly downloaded (run again to resume)"
      fi
      printf '%-16s %8s  ggml-%-20s %s\n' "$n" "$size" "$n.bin" "$mark"
    done | sed 's/ *$//'
    exit 0 ;;
  # For make install: a bash completion of the names and flags.
  --completion) echo "complete -W '--list --help --version $names' $prog"; exit 0 ;;
  -*) usage "unknown flag $1" ;;
esac
name=$1
line=$(echo "$table" | awk -v n="$name" '$1 == n')
[ -n "$line" ] || usage "unknown model '$name'; one of: $names"
sum=$(echo "$line" | awk '{print $3}')
repo=$(echo "$line" | awk '{print $4}')
bytes=$(echo "$line" | awk '{print $5}')
file="ggml-$name.bin"
url=${YAZ_MODEL_URL:-${base_url:-$hub/${repo:-ggerganov/whisper.cpp}/resolve/main}/$file}
dest="$dir/$file"
hash=sha1
[ ${#sum} -eq 64 ] && hash=sha256

# fetch_unpinned downloads an entry with no pinned checksum (sha1 "-"):
# resumable into a .part file like the others, checked against the size
# and sha256 the server announces (X-Linked-Size, X-Linked-Etag: what the
# model hub sends for its files; else Content-Length for the size), and
# against the ggml magic; then renamed into place. It prints the sha256.
fetch_unpinned() {
  local url=${YAZ_MODEL_URL:-$parakeet_url/$file} part="$dest.part" headers size etag got
  if [ -f "$dest" ]; then
    echo "$prog: $dest is already there (not pinned: not re-checked)" >&2
    echo "$dest"
    exit 0
  fi
  command -v curl >/dev/null || die "curl is missing (apt install curl)"
  if ! headers=$(curl --fail --silent --show-error --head --location --connect-timeout 15 "$url" 2>&1); then
    die "download of $url failed (offline? behind a proxy?): ${headers##*curl: }"
  fi
  headers=$(printf '%s\n' "$headers" | tr -d '\r' | tr 'A-Z' 'a-z')
  etag=$(printf '%s\n' "$headers" | sed -n 's/^x-linked-etag: *"\{0,1\}\([0-9a-f]\{64\}\)"\{0,1\} *$/\1/p' | tail -n1)
  size=$(printf '%s\n' "$headers" | sed -n 's/^x-linked-size: *\([0-9]\{1,\}\) *$/\1/p' | tail -n1)
  [ -n "$size" ] || size=$(printf '%s\n' "$headers" | sed -n 's/^content-length: *\([0-9]\{1,\}\) *$/\1/p' | tail -n1)
  mkdir -p "$dir"
  echo "$prog: downloading $file ($(echo "$line" | awk '{print $2}'), not pinned) to $dir" >&2
  progress=--progress-bar
  [ -t 2 ] || progress=--silent
  if ! curl --fail --location --show-error $progress --connect-timeout 15 \
       --continue-at - --output "$part" "$url"; then
    [ -s "$part" ] || rm -f "$part"
    die "download of $url failed (offline? behind a proxy?); run again to resume what was fetched"
  fi
  bad() { mv -f "$part" "$part.bad"; die "$1; the download was moved to $part.bad"; }
  if [ -n "$size" ] && [ "$(stat -c %s "$part")" != "$size" ]; then
    bad "size mismatch for $file: the server announced $size bytes, got $(stat -c %s "$part")"
  fi
  [ "$(head -c 4 "$part")" = lmgg ] || bad "$file is not a ggml model file"
  got=$(sha256sum "$part" | cut -d' ' -f1)
  if [ -n "$etag" ] && [ "$got" != "$etag" ]; then
    bad "checksum mismatch for $file: the server announced sha256 $etag, got $got"
  fi
  mv -f "$part" "$dest"
  if [ -n "$etag" ]; then
    echo "$prog: $file sha256 $got (as the server announced; not pinned)" >&2
  else
    echo "$prog: $file sha256 $got (the server announced no checksum: compare it yourself; not pinned)" >&2
  fi
  echo "$dest"
  exit 0
}
[ "$sum" != "-" ] || fetch_unpinned

size() { wc -c < "$1" | tr -d ' '; }
sized() { [ -z "$bytes" ] || [ "$(size "$1")" = "$bytes" ]; }
check() { sized "$1" && [ "$("${hash}sum" "$1" | cut -d' ' -f1)" = "$sum" ]; }

if [ -f "$dest" ]; then
  check "$dest" && { echo "$dest"; exit 0; }
  die "$dest exists but its checksum is wrong; remove it and run again"
fi
command -v curl >/dev/null || die "curl is missing (apt install curl)"
mkdir -p "$dir"
part="$dest.part"
echo "$prog: downloading $file ($(echo "$line" | awk '{print $2}')) to $dir" >&2
progress=--progress-bar
[ -t 2 ] || progress=--silent
# A .part of the pinned size is complete: only the checks are left.
if [ -n "$bytes" ] && [ -f "$part" ] && [ "$(size "$part")" -ge "$bytes" ]; then
  :
elif ! curl --fail --location --show-error $progress --connect-timeout 15 \
     --continue-at - --output "$part" "$url"; then
  [ -s "$part" ] || rm -f "$part"
  die "download of $url failed (offline? behind a proxy?); run again to resume what was fetched, or copy a $file you have into $dir"
fi
if ! sized "$part"; then
  mv -f "$part" "$part.bad"
  die "size mismatch for $file: $(size "$part.bad") bytes, want $bytes; the download was moved to $part.bad"
fi
if ! check "$part"; then
  mv -f "$part" "$part.bad"
  die "checksum mismatch for $file (want $hash $sum); the download was moved to $part.bad"
fi
mv -f "$part" "$dest"
echo "$dest"
