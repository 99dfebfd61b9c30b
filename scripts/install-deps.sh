#!/bin/sh
# Installs det's build and runtime dependencies from Debian 12's packages.
# Does nothing when they are all present, so it is cheap to call every time.
# --with-tests adds what only the tests need.
set -eu

PACKAGES="build-essential cmake pkg-config ccache python3 acl
  libcaf-dev libprotobuf-dev protobuf-compiler libpqxx-dev libpq-dev postgresql-15
  libtomlplusplus-dev doctest-dev libtorch-dev libgloo-dev libcpp-httplib-dev
  nlohmann-json3-dev libcli11-dev libreadline-dev zlib1g-dev libopenblas0-pthread libarchive-dev uuid-dev libsodium-dev libssl-dev libyaml-cpp-dev
  libspdlog-dev libboost1.81-dev dataset-fashion-mnist fortunes
  jupyter-notebook openssh-server openssh-client podman runc catatonit"
# fortunes (with fortunes-min, which it depends on): builtin:gpt's corpus, about 2.6 MB of English
# text in /usr/share/games/fortunes, read as byte-level tokens (gpu/token_data.cpp).
# libspdlog-dev: det-node's log (node/log.cpp), text or JSON lines with a component and a level.
# libboost1.81-dev: Beast and Asio, the master's HTTP and WebSocket server. jupyter-notebook and
# openssh-server are what agents run for notebooks and shells; openssh-client is det shell open's ssh.
# podman runs trials and tasks whose config names an image, with runc (its default crun fails on
# cgroup v1 hybrid hosts) and catatonit as the container's init (--init: a stop's SIGTERM reaches
# a process without a handler).
# The TLS tests make their certificates at run time with the openssl command; the TensorBoard
# test decodes event files with python3-protobuf; the Prometheus test lints with promtool
# (prometheus; its service is not started: the package's postinst finds no systemd here); the
# web UI's tests drive Debian's Chromium with Selenium.
# The container tests build their image from Debian's mirror with mmdebstrap; the Slurm provider's
# test starts a one-node Slurm (slurm-wlm, munge); examples/pytorch-core-api's test trains with
# Debian's PyTorch (python3-torch); bench/tpe_vs_optuna.py runs Optuna (python3-optuna).
# The fuzz targets (fuzz/, scripts/fuzz.sh) build with clang-14; libclang-rt-14-dev has the
# libFuzzer and sanitizer runtimes that -fsanitize=fuzzer,address,undefined links.
# scripts/package.sh (the release archive, which the package test unpacks into a bare rootfs)
# points the archive's binaries and libraries at its own lib/ with patchelf.
TEST_PACKAGES="openssl python3-protobuf prometheus chromium chromium-driver python3-selenium mmdebstrap slurm-wlm munge
  python3-torch python3-optuna clang-14 libclang-rt-14-dev patchelf"
[ "${1:-}" = "--with-tests" ] && PACKAGES="$PACKAGES $TEST_PACKAGES"

SUDO=""
[ "$(id -u)" -ne 0 ] && SUDO="sudo"

missing=""
for p in $PACKAGES; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
if [ -n "$missing" ]; then
  echo "det: installing$missing" >&2
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends $missing >/dev/null
fi

# uPlot, the web UI's charts (what Determined's web UI draws with; 53 KB), pinned, from the npm
# registry with the machine's npm; the tarball must have the sha512 pinned here. The
# build copies its two files into the web UI (webui/CMakeLists.txt).
UPLOT_VERSION=1.6.32
UPLOT_SHA512=2883159c6ebccefbb95d751b0b82d010f9e1c0ec41b8bc96d401eda66e882935c89a46cb824332fa369b8cb8122cc6ac36e186cd09bf7a9ded3a4c93c6989023
UPLOT_DIR=/usr/local/share/det/vendor/uplot-$UPLOT_VERSION
if [ ! -f "$UPLOT_DIR/uPlot.iife.min.js" ] || [ ! -f "$UPLOT_DIR/uPlot.min.css" ]; then
  command -v npm >/dev/null || { echo "det: npm is needed once to fetch uPlot $UPLOT_VERSION for the web UI" >&2; exit 1; }
  echo "det: fetching uPlot $UPLOT_VERSION from the npm registry" >&2
  pack=$(mktemp -d)
  (cd "$pack" && npm pack --silent "uplot@$UPLOT_VERSION" >/dev/null)
  actual=$(sha512sum "$pack/uplot-$UPLOT_VERSION.tgz" | cut -d' ' -f1)
  if [ "$actual" != "$UPLOT_SHA512" ]; then
    echo "det: uplot-$UPLOT_VERSION.tgz does not have the pinned sha512; not installing it" >&2
    rm -rf "$pack"
    exit 1
  fi
  tar -xzf "$pack/uplot-$UPLOT_VERSION.tgz" -C "$pack" package/dist/uPlot.iife.min.js package/dist/uPlot.min.css package/LICENSE
  $SUDO mkdir -p "$UPLOT_DIR"
  $SUDO cp "$pack/package/dist/uPlot.iife.min.js" "$pack/package/dist/uPlot.min.css" "$pack/package/LICENSE" "$UPLOT_DIR/"
  rm -rf "$pack"
fi
