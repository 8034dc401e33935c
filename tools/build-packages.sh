# The Debian packages rdmaconf builds from (sourced by tools/quickstart and
# tools/build-deb): the command, its packages and the Wireshark plugin.
build_packages=(cmake ninja-build g++ pkg-config libpcap-dev nlohmann-json3-dev libisal-dev libcli11-dev libfmt-dev
                nettle-dev wireshark-dev libxdp-dev libbpf-dev libboost-dev dpkg-dev file)
# Installs those of PACKAGES... that are missing (as root).
install_missing() {
  local missing=() p
  for p in "$@"; do dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p"); done
  [ ${#missing[@]} -gt 0 ] || return 0
  echo "installing: ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}
