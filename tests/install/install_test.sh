#!/usr/bin/env bash
# Proves the installed tree: `cmake --install BUILD --prefix P` installs the amk binary, the
# libraries, only public headers (every header an installed header includes is installed too), a
# CMake package and a pkg-config file; examples/embed-cpp configures, builds and runs against it
# through find_package(amk), and the same source builds through pkg-config.
#   install_test.sh SOURCE_DIR BUILD_DIR
set -euo pipefail
src=$1 build=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
prefix=$work/prefix
cmake --install "$build" --prefix "$prefix" >/dev/null
test -x "$prefix/bin/amk"
"$prefix/bin/amk" validate "$src/tests/conformance/programs/llama_1B_default.json" >/dev/null
# Only public headers, and they are closed under #include.
inc=$prefix/include/amk
for h in $(cd "$inc" && find . -name '*.h' | sed 's|^\./||'); do
  for dep in $(sed -n 's/^#include "\([a-z_]*\/[a-z_0-9]*\.h\)".*/\1/p' "$inc/$h"); do
    [[ -f "$inc/$dep" ]] || { echo "installed $h includes $dep, which is not installed" >&2; exit 1; }
  done
done
for private in ir/json_lexer.h ir/pyjson.h validate/context.h lower/tile.h vm/image.h; do
  [[ ! -e "$inc/$private" ]] || { echo "private header $private was installed" >&2; exit 1; }
done
# A CMake consumer.
cmake -S "$src/examples/embed-cpp" -B "$work/cmake-build" -DCMAKE_PREFIX_PATH="$prefix" \
  -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$work/cmake-build" >/dev/null
out=$("$work/cmake-build/embed")
[[ $out == "toy-2L: VALID, 48 tasks" ]] || { echo "embed printed: $out" >&2; exit 1; }
set +e
"$work/cmake-build/embed" "$src/tests/conformance/programs/bad_sm_queue_order.json" >"$work/out"
rc=$?
set -e
[[ $rc == 1 && $(cat "$work/out") == *": REJECTED, "* ]] || { echo "rejected program: rc $rc" >&2; exit 1; }
# A pkg-config consumer.
export PKG_CONFIG_PATH=$prefix/lib/pkgconfig:$prefix/lib/x86_64-linux-gnu/pkgconfig
# shellcheck disable=SC2046
g++ -O1 "$src/examples/embed-cpp/main.cpp" -o "$work/embed-pc" $(pkg-config --cflags --libs amk)
out=$("$work/embed-pc" toy-1L)
[[ $out == "toy-1L: VALID, 27 tasks" ]] || { echo "pkg-config embed printed: $out" >&2; exit 1; }
# The Python package, when this build has it: importable from the prefix alone.
py=""
if compgen -G "$build/python/amk/_amk*.so" >/dev/null; then
  site=$(cd "$prefix" && ls -d lib/python3.*/dist-packages)
  out=$(cd "$work" && PYTHONPATH="$prefix/$site" /usr/bin/python3 -c \
    'import amk, amk.distributed; print(amk.__file__.startswith("'"$prefix"'"), amk.validate(amk.lower("toy-2L", "h100")).ok)')
  [[ $out == "True True" ]] || { echo "installed Python package: $out" >&2; exit 1; }
  py=", the Python package"
fi
echo "install: amk, $(cd "$inc" && find . -name '*.h' | wc -l) public headers, CMake package, pkg-config$py all work"
