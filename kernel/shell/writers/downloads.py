"""What downloaders write: `curl -o F`, `-O` (the URL's name), `-OJ` (the server's),
`wget -O F`, `-P DIR`, `-r`, their logs and cookie jars. Pure.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Sequence

from kernel.shell.words import Word
from kernel.shell.writers.options import _given, _has, _opts, _scan
from kernel.shell.writers.targets import _any_in, _inside

_CURL = _opts(
    "-o --output -c --cookie-jar -D --dump-header --output-dir --trace --trace-ascii "
    "--stderr --libcurl --etag-save --hsts --alt-svc -d --data --data-raw --data-binary "
    "--data-urlencode -H --header -X --request -u --user -A --user-agent -e --referer -b "
    "--cookie -K --config -T --upload-file -F --form -x --proxy -w --write-out -m --max-time "
    "--connect-timeout -r --range -C --continue-at -Y --speed-limit -y --speed-time -z "
    "--time-cond -E --cert --key --cacert -Q --quote --resolve --retry -U --proxy-user",
    "", "--remote-name --remote-name-all --create-dirs --remote-header-name")


def _url_name(url: Word) -> Word:
    path = re.sub(r"^[a-z][a-z0-9+.-]*://[^/]*", "", url.text, flags=re.I).split("?")[0]
    return Word(posixpath.basename(path) or "index.html", url.kind)


def _curl(words: Sequence[Word]) -> list[Word]:
    found, operands = _scan(words, _CURL)
    out = [w for w in _given(found, "-o", "--output", "-c", "--cookie-jar", "-D",
                             "--dump-header", "--trace", "--trace-ascii", "--stderr",
                             "--libcurl", "--etag-save", "--hsts", "--alt-svc")
           if w.text != "-"]
    if _has(found, "-O", "--remote-name", "--remote-name-all"):
        folder = (_given(found, "--output-dir") or [Word(".")])[-1]
        if _has(found, "-J", "--remote-header-name"):  # the server names the file
            return [*out, _any_in(folder)]
        out += [_inside(folder, _url_name(u)) for u in operands]
    return out


_WGET = _opts(
    "-O --output-document -P --directory-prefix -o --output-file -a --append-output -i "
    "--input-file -e --execute -U --user-agent --header -t --tries -T --timeout -w --wait -Q "
    "--quota -l --level -A --accept -R --reject -D --domains -I --include-directories -X "
    "--exclude-directories --post-data --post-file --user --password --load-cookies "
    "--save-cookies --ca-certificate --certificate --private-key -B --base",
    "", "--recursive --mirror --content-disposition --trust-server-names "
    "--force-directories")


def _wget(words: Sequence[Word]) -> list[Word]:
    found, operands = _scan(words, _WGET)
    out = [w for w in _given(found, "-o", "--output-file", "-a", "--append-output",
                             "--save-cookies") if w.text != "-"]
    document = _given(found, "-O", "--output-document")
    if document:
        return out + [w for w in document if w.text != "-"]
    folder = (_given(found, "-P", "--directory-prefix") or [Word(".")])[-1]
    if _has(found, "-r", "--recursive", "-m", "--mirror", "-i", "--input-file",
            "--content-disposition", "--trust-server-names", "-x", "--force-directories"):
        return [*out, _any_in(folder)]  # names from the pages, the server, a list
    return out + [_inside(folder, _url_name(u)) for u in operands]
