#!/bin/sh
# Installs det's build and runtime dependencies from Debian 12's packages.
# Does nothing when they are all present, so it is cheap to call every time.
# --with-tests adds what only the tests need.
set -eu

PACKAGES="build-essential cmake pkg-config ccache python3 acl
  libcaf-dev libprotobuf-dev protobuf-compiler libpqxx-dev libpq-dev postgresql-15
  libtomlplusplus-dev doctest-dev libtorch-dev libgloo-dev libcpp-httplib-dev
  nlohmann-json3-dev libcli11-dev libreadline-dev zlib1g-dev libopenblas0-pthread libarchive-dev uuid-dev libsodium-dev libssl-dev
  libboost1.81-dev dataset-fashion-mnist
  jupyter-notebook openssh-server openssh-client"
# libboost1.81-dev: Beast and Asio, the master's HTTP and WebSocket server. jupyter-notebook and
# openssh-server are what agents run for notebooks and shells; openssh-client is det shell open's ssh.
# The TLS tests make their certificates at run time with the openssl command; the TensorBoard
# test decodes event files with python3-protobuf; the Prometheus test lints with promtool
# (prometheus; its service is not started: the package's postinst finds no systemd here).
TEST_PACKAGES="openssl python3-protobuf prometheus"
[ "${1:-}" = "--with-tests" ] && PACKAGES="$PACKAGES $TEST_PACKAGES"

missing=""
for p in $PACKAGES; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
[ -z "$missing" ] && exit 0

echo "det: installing$missing" >&2
SUDO=""
[ "$(id -u)" -ne 0 ] && SUDO="sudo"
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends $missing >/dev/null
