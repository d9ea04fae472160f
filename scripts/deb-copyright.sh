#!/usr/bin/env bash
# deb-copyright.sh BIN: the Debian copyright file (DEP-5) of the programs in
# BIN: YazSes's own licence, then every component linked in or shipped —
# whisper.cpp and ggml, miniaudio (through malgo), the Silero VAD model, the
# Go standard library and each Go module the programs were built with (read
# from the binaries: `go version -m`), its licence found in the module
# cache's copy of it. A module whose licence cannot be read stops the
# script: the package never ships one unnamed.
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${1:?usage: deb-copyright.sh BIN}
go=${GO:-go}

license_of() { # the SPDX-like name of a licence text on stdin
  local text
  text=$(tr -s ' \n\t' ' ')
  case "$text" in
    *"Apache License"*"Version 2.0"*) echo Apache-2.0 ;;
    *"This is free and unencumbered software released into the public domain"*) echo Unlicense ;;
    *"Mozilla Public License"*"2.0"*) echo MPL-2.0 ;;
    *"Permission is hereby granted, free of charge"*) echo Expat ;;
    *"Permission to use, copy, modify, and/or distribute"*|*"Permission to use, copy, modify, and distribute"*) echo ISC ;;
    *"Redistribution and use in source and binary forms"*"Neither the name"*) echo BSD-3-clause ;;
    *"Redistribution and use in source and binary forms"*) echo BSD-2-clause ;;
    *) return 1 ;;
  esac
}

cat <<'EOF'
Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/
Upstream-Name: YazSes
Upstream-Contact: The YazSes developers <yazses@users.noreply.github.com>
Source: https://github.com/yazses/yazses

Files: *
Copyright: 2026 The YazSes developers
License: Expat

Files: usr/bin/yaz-decode
Copyright: 2023-2026 The ggml authors (whisper.cpp and ggml, linked in)
License: Expat
Comment: whisper.cpp 1.9.1 (ggml-org/whisper.cpp), built from its pinned source.

Files: usr/bin/yaz-capture usr/bin/yaz-speak
Copyright: 2015-2026 David Reid (miniaudio, linked in through github.com/gen2brain/malgo)
License: MIT-0
 Permission is hereby granted, free of charge, to any person obtaining a copy
 of this software and associated documentation files (the "Software"), to
 deal in the Software without restriction, including without limitation the
 rights to use, copy, modify, merge, publish, distribute, sublicense, and/or
 sell copies of the Software, and to permit persons to whom the Software is
 furnished to do so.
 .
 THE SOFTWARE IS PROVIDED "AS IS", WITHOUT WARRANTY OF ANY KIND, EXPRESS OR
 IMPLIED, INCLUDING BUT NOT LIMITED TO THE WARRANTIES OF MERCHANTABILITY,
 FITNESS FOR A PARTICULAR PURPOSE AND NONINFRINGEMENT. IN NO EVENT SHALL THE
 AUTHORS OR COPYRIGHT HOLDERS BE LIABLE FOR ANY CLAIM, DAMAGES OR OTHER
 LIABILITY, WHETHER IN AN ACTION OF CONTRACT, TORT OR OTHERWISE, ARISING
 FROM, OUT OF OR IN CONNECTION WITH THE SOFTWARE OR THE USE OR OTHER DEALINGS
 IN THE SOFTWARE.
Comment: miniaudio is dual-licensed, public domain (Unlicense) or MIT No
 Attribution; the latter is given here.

Files: usr/share/yazses/models/ggml-silero-v6.2.0.bin
Copyright: 2020-2026 Silero Team
License: Expat
Comment: The Silero VAD v6.2.0 model (snakers4/silero-vad), converted to
 ggml by the whisper.cpp authors (ggml-org/whisper-vad on the model hub).

Files: usr/bin/*
Copyright: 2009 The Go Authors
License: BSD-3-clause
Comment: The Go standard library and runtime, linked into every program.
EOF

# The Go modules linked into the programs.
mods=$("$go" version -m "$bin"/* 2>/dev/null | awk '$1 == "dep" { print $2 "@" $3 }' | sort -u)
[ -n "$mods" ] || { echo "deb-copyright: no Go modules found in $bin (not Go programs?)" >&2; exit 1; }
declare -A used=([Expat]=1 [BSD-3-clause]=1)
for m in $mods; do
  dir=$("$go" mod download -json "$m" 2>/dev/null | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
  lic=
  for f in LICENSE LICENSE.md LICENSE.txt LICENCE COPYING license; do
    [ -n "$dir" ] && [ -f "$dir/$f" ] && { lic=$dir/$f; break; }
  done
  [ -n "$lic" ] || { echo "deb-copyright: no licence file for $m" >&2; exit 1; }
  name=$(license_of < "$lic") || { echo "deb-copyright: cannot tell the licence of $m ($lic)" >&2; exit 1; }
  holder=$(grep -m1 -iE '^[[:space:]]*copyright[[:space:]]*(\(c\)|©|[0-9])' "$lic" | sed 's/^[[:space:]]*[Cc]opyright[[:space:]]*//; s/^(c)[[:space:]]*//; s/^©[[:space:]]*//' || true)
  used[$name]=1
  printf '\nFiles: usr/bin/*\nCopyright: %s\nLicense: %s\nComment: Go module %s, linked in.\n' "${holder:-the authors of ${m%@*}}" "$name" "$m"
done

# The licences' texts: the short ones here, the long ones in
# /usr/share/common-licenses.
for name in "${!used[@]}"; do
  case "$name" in
    Expat) cat <<'EOF'

License: Expat
 Permission is hereby granted, free of charge, to any person obtaining a copy
 of this software and associated documentation files (the "Software"), to
 deal in the Software without restriction, including without limitation the
 rights to use, copy, modify, merge, publish, distribute, sublicense, and/or
 sell copies of the Software, and to permit persons to whom the Software is
 furnished to do so, subject to the following conditions:
 .
 The above copyright notice and this permission notice shall be included in
 all copies or substantial portions of the Software.
 .
 THE SOFTWARE IS PROVIDED "AS IS", WITHOUT WARRANTY OF ANY KIND, EXPRESS OR
 IMPLIED, INCLUDING BUT NOT LIMITED TO THE WARRANTIES OF MERCHANTABILITY,
 FITNESS FOR A PARTICULAR PURPOSE AND NONINFRINGEMENT. IN NO EVENT SHALL THE
 AUTHORS OR COPYRIGHT HOLDERS BE LIABLE FOR ANY CLAIM, DAMAGES OR OTHER
 LIABILITY, WHETHER IN AN ACTION OF CONTRACT, TORT OR OTHERWISE, ARISING
 FROM, OUT OF OR IN CONNECTION WITH THE SOFTWARE OR THE USE OR OTHER DEALINGS
 IN THE SOFTWARE.
EOF
    ;;
    BSD-3-clause) cat <<'EOF'

License: BSD-3-clause
 Redistribution and use in source and binary forms, with or without
 modification, are permitted provided that the following conditions are met:
 .
 1. Redistributions of source code must retain the above copyright notice,
    this list of conditions and the following disclaimer.
 2. Redistributions in binary form must reproduce the above copyright notice,
    this list of conditions and the following disclaimer in the documentation
    and/or other materials provided with the distribution.
 3. Neither the name of the copyright holder nor the names of its
    contributors may be used to endorse or promote products derived from
    this software without specific prior written permission.
 .
 THIS SOFTWARE IS PROVIDED BY THE COPYRIGHT HOLDERS AND CONTRIBUTORS "AS IS"
 AND ANY EXPRESS OR IMPLIED WARRANTIES, INCLUDING, BUT NOT LIMITED TO, THE
 IMPLIED WARRANTIES OF MERCHANTABILITY AND FITNESS FOR A PARTICULAR PURPOSE
 ARE DISCLAIMED. IN NO EVENT SHALL THE COPYRIGHT HOLDER OR CONTRIBUTORS BE
 LIABLE FOR ANY DIRECT, INDIRECT, INCIDENTAL, SPECIAL, EXEMPLARY, OR
 CONSEQUENTIAL DAMAGES (INCLUDING, BUT NOT LIMITED TO, PROCUREMENT OF
 SUBSTITUTE GOODS OR SERVICES; LOSS OF USE, DATA, OR PROFITS; OR BUSINESS
 INTERRUPTION) HOWEVER CAUSED AND ON ANY THEORY OF LIABILITY, WHETHER IN
 CONTRACT, STRICT LIABILITY, OR TORT (INCLUDING NEGLIGENCE OR OTHERWISE)
 ARISING IN ANY WAY OUT OF THE USE OF THIS SOFTWARE, EVEN IF ADVISED OF THE
 POSSIBILITY OF SUCH DAMAGE.
EOF
    ;;
    BSD-2-clause) cat <<'EOF'

License: BSD-2-clause
 Redistribution and use in source and binary forms, with or without
 modification, are permitted provided that the following conditions are met:
 .
 1. Redistributions of source code must retain the above copyright notice,
    this list of conditions and the following disclaimer.
 2. Redistributions in binary form must reproduce the above copyright notice,
    this list of conditions and the following disclaimer in the documentation
    and/or other materials provided with the distribution.
 .
 THIS SOFTWARE IS PROVIDED BY THE COPYRIGHT HOLDERS AND CONTRIBUTORS "AS IS"
 AND ANY EXPRESS OR IMPLIED WARRANTIES, INCLUDING, BUT NOT LIMITED TO, THE
 IMPLIED WARRANTIES OF MERCHANTABILITY AND FITNESS FOR A PARTICULAR PURPOSE
 ARE DISCLAIMED. IN NO EVENT SHALL THE COPYRIGHT HOLDER OR CONTRIBUTORS BE
 LIABLE FOR ANY DIRECT, INDIRECT, INCIDENTAL, SPECIAL, EXEMPLARY, OR
 CONSEQUENTIAL DAMAGES (INCLUDING, BUT NOT LIMITED TO, PROCUREMENT OF
 SUBSTITUTE GOODS OR SERVICES; LOSS OF USE, DATA, OR PROFITS; OR BUSINESS
 INTERRUPTION) HOWEVER CAUSED AND ON ANY THEORY OF LIABILITY, WHETHER IN
 CONTRACT, STRICT LIABILITY, OR TORT (INCLUDING NEGLIGENCE OR OTHERWISE)
 ARISING IN ANY WAY OUT OF THE USE OF THIS SOFTWARE, EVEN IF ADVISED OF THE
 POSSIBILITY OF SUCH DAMAGE.
EOF
    ;;
    ISC) cat <<'EOF'

License: ISC
 Permission to use, copy, modify, and/or distribute this software for any
 purpose with or without fee is hereby granted, provided that the above
 copyright notice and this permission notice appear in all copies.
 .
 THE SOFTWARE IS PROVIDED "AS IS" AND THE AUTHOR DISCLAIMS ALL WARRANTIES
 WITH REGARD TO THIS SOFTWARE INCLUDING ALL IMPLIED WARRANTIES OF
 MERCHANTABILITY AND FITNESS. IN NO EVENT SHALL THE AUTHOR BE LIABLE FOR ANY
 SPECIAL, DIRECT, INDIRECT, OR CONSEQUENTIAL DAMAGES OR ANY DAMAGES
 WHATSOEVER RESULTING FROM LOSS OF USE, DATA OR PROFITS, WHETHER IN AN ACTION
 OF CONTRACT, NEGLIGENCE OR OTHER TORTIOUS ACTION, ARISING OUT OF OR IN
 CONNECTION WITH THE USE OR PERFORMANCE OF THIS SOFTWARE.
EOF
    ;;
    Unlicense) cat <<'EOF'

License: Unlicense
 This is free and unencumbered software released into the public domain.
 .
 Anyone is free to copy, modify, publish, use, compile, sell, or distribute
 this software, either in source code form or as a compiled binary, for any
 purpose, commercial or non-commercial, and by any means.
 .
 In jurisdictions that recognize copyright laws, the author or authors of
 this software dedicate any and all copyright interest in the software to
 the public domain. We make this dedication for the benefit of the public at
 large and to the detriment of our heirs and successors. We intend this
 dedication to be an overt act of relinquishment in perpetuity of all
 present and future rights to this software under copyright law.
 .
 THE SOFTWARE IS PROVIDED "AS IS", WITHOUT WARRANTY OF ANY KIND, EXPRESS OR
 IMPLIED, INCLUDING BUT NOT LIMITED TO THE WARRANTIES OF MERCHANTABILITY,
 FITNESS FOR A PARTICULAR PURPOSE AND NONINFRINGEMENT. IN NO EVENT SHALL THE
 AUTHORS BE LIABLE FOR ANY CLAIM, DAMAGES OR OTHER LIABILITY, WHETHER IN AN
 ACTION OF CONTRACT, TORT OR OTHERWISE, ARISING FROM, OUT OF OR IN
 CONNECTION WITH THE SOFTWARE OR THE USE OR OTHER DEALINGS IN THE SOFTWARE.
EOF
    ;;
    Apache-2.0) printf '\nLicense: Apache-2.0\n On Debian systems, the full text of the Apache License 2.0 is in\n /usr/share/common-licenses/Apache-2.0.\n' ;;
    MPL-2.0) printf '\nLicense: MPL-2.0\n On Debian systems, the full text of the Mozilla Public License 2.0 is in\n /usr/share/common-licenses/MPL-2.0.\n' ;;
  esac
done
