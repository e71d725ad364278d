#!/usr/bin/env bash
# Installs the CUDA compile toolchain (nvcc, cudart, cuBLAS headers and libraries) on Debian bookworm from
# Debian's own non-free archive, so that `go build -tags cuda ./...` and .ci/cuda-check.sh can compile the
# CUDA backend on a machine without a GPU. Nothing here needs (or installs) an NVIDIA driver.
#
# Debian ships nvidia-cuda-toolkit (CUDA 11.8 in bookworm; sm_80 and sm_90 supported) in the non-free
# component, which the default images leave out; this script adds `contrib non-free` as a separate apt source
# (it never rewrites the distribution's own files), then installs the toolkit without recommends (~2.3 GB).
#
# Usage: sudo scripts/install-cuda-toolchain.sh     (idempotent; re-running is cheap once installed)
set -euo pipefail

log() { printf 'install-cuda-toolchain: %s\n' "$*" >&2; }

if command -v nvcc >/dev/null 2>&1; then
	log "nvcc already present: $(nvcc --version | tail -n1)"
	exit 0
fi

if [[ $(id -u) -ne 0 ]]; then
	log "must run as root (it edits apt sources and installs packages)"
	exit 1
fi

if [[ ! -r /etc/os-release ]]; then
	log "no /etc/os-release: cannot tell the distribution"
	exit 1
fi
# shellcheck disable=SC1091
. /etc/os-release
if [[ ${ID:-} != debian ]]; then
	log "this script knows Debian only (found ID=${ID:-unknown}); on Ubuntu use NVIDIA's cuda-toolkit packages"
	exit 1
fi
codename=${VERSION_CODENAME:-}
if [[ -z $codename ]]; then
	log "VERSION_CODENAME missing in /etc/os-release"
	exit 1
fi

# Which mirror the system already uses, so the extra components come from the same place.
mirror=http://deb.debian.org/debian
keyring=/usr/share/keyrings/debian-archive-keyring.gpg
sources_file=/etc/apt/sources.list.d/lightllm-cuda-nonfree
has_nonfree=0
if compgen -G '/etc/apt/sources.list.d/*.sources' >/dev/null; then
	# deb822 format (bookworm's default: debian.sources).
	if awk '/^Components:/ && /non-free([[:space:]]|$)/ {f=1} END {exit !f}' /etc/apt/sources.list.d/*.sources; then
		has_nonfree=1
	fi
	m=$(awk '/^URIs:/ && $2 ~ /\/debian\/?$/ {print $2; exit}' /etc/apt/sources.list.d/*.sources || true)
	[[ -n $m ]] && mirror=$m
fi
if [[ -r /etc/apt/sources.list ]]; then
	if grep -Eq '^deb[[:space:]].*[[:space:]]non-free([[:space:]]|$)' /etc/apt/sources.list; then
		has_nonfree=1
	fi
fi

if [[ $has_nonfree -eq 0 ]]; then
	if compgen -G '/etc/apt/sources.list.d/*.sources' >/dev/null || [[ ! -r /etc/apt/sources.list ]]; then
		log "adding contrib non-free (deb822) in ${sources_file}.sources"
		cat >"${sources_file}.sources" <<SRC
Types: deb
URIs: ${mirror}
Suites: ${codename} ${codename}-updates
Components: contrib non-free
Signed-By: ${keyring}
SRC
	else
		log "adding contrib non-free (one-line format) in ${sources_file}.list"
		printf 'deb %s %s contrib non-free\ndeb %s %s-updates contrib non-free\n' \
			"$mirror" "$codename" "$mirror" "$codename" >"${sources_file}.list"
	fi
else
	log "non-free already enabled"
fi

export DEBIAN_FRONTEND=noninteractive
log "apt-get update"
apt-get update -q
log "installing nvidia-cuda-toolkit (no recommends; this downloads ~2.3 GB)"
apt-get install -y -q --no-install-recommends nvidia-cuda-toolkit nvidia-cuda-dev

if ! command -v nvcc >/dev/null 2>&1; then
	log "nvcc still not on PATH after the install"
	exit 1
fi
log "done: $(nvcc --version | tail -n1)"
