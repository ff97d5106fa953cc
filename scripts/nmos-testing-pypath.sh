#!/usr/bin/env bash
# Makes the PYTHONPATH folder scripts/nmos-testing.sh needs (NMOS_TESTING_PY) from checkouts of
# the Python modules Debian 12 lacks, as links (nothing is copied or installed):
#   RAMLFICATIONS  spotify/ramlfications at tag 0.1.9
#   JSONREF        gazpachoking/jsonref at tag v1.1.0
#   XEGER          crdoconnor/xeger (master, with the Python 3.11 sre_parse fix)
#   ZEROCONF       python-zeroconf/python-zeroconf at tag 0.150.0 (its pure-Python src/zeroconf)
# and `Crypto`, a link to Debian's Cryptodome (python3-pycryptodome), which the tool imports as Crypto.
#
# Usage: scripts/nmos-testing-pypath.sh RAMLFICATIONS JSONREF XEGER ZEROCONF DEST
set -euo pipefail
[ $# = 5 ] || { echo "usage: $0 RAMLFICATIONS JSONREF XEGER ZEROCONF DEST" >&2; exit 2; }
abs() { (cd "$1" && pwd); }
RAML=$(abs "$1") JSONREF=$(abs "$2") XEGER=$(abs "$3") ZEROCONF=$(abs "$4") DEST=$5
PYTHON=/usr/bin/python3
check_tag() {
  local dir=$1 tag=$2
  [ "$(git -C "$dir" rev-parse HEAD)" = "$(git -C "$dir" rev-parse "$tag^{commit}")" ] || { echo "nmos-testing-pypath: $dir is not at $tag" >&2; exit 2; }
}
check_tag "$RAML" 0.1.9
check_tag "$JSONREF" v1.1.0
check_tag "$ZEROCONF" 0.150.0
for f in "$RAML/ramlfications/__init__.py" "$JSONREF/jsonref.py" "$JSONREF/proxytypes.py" "$XEGER/xeger/__init__.py" "$ZEROCONF/src/zeroconf/__init__.py"; do
  [ -f "$f" ] || { echo "nmos-testing-pypath: no $f" >&2; exit 2; }
done
CRYPTODOME=$("$PYTHON" -c 'import Cryptodome, os; print(os.path.dirname(Cryptodome.__file__))') \
  || { echo "nmos-testing-pypath: no Cryptodome (apt-get install python3-pycryptodome)" >&2; exit 2; }
mkdir -p "$DEST"
ln -sfn "$RAML/ramlfications" "$DEST/ramlfications"
ln -sfn "$JSONREF/jsonref.py" "$DEST/jsonref.py"
ln -sfn "$JSONREF/proxytypes.py" "$DEST/proxytypes.py"
ln -sfn "$XEGER/xeger" "$DEST/xeger"
ln -sfn "$ZEROCONF/src/zeroconf" "$DEST/zeroconf"
ln -sfn "$CRYPTODOME" "$DEST/Crypto"
PYTHONPATH="$DEST" "$PYTHON" -W ignore -c 'import ramlfications, jsonref, xeger, zeroconf, Crypto.PublicKey; assert zeroconf.__version__ == "0.150.0"'
echo "$DEST"
