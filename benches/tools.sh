# shellcheck shell=bash
# The tools benches/e2e.sh and benches/real.sh need, checked before they measure anything: bash
# >= 5 (for $EPOCHREALTIME), GNU time at /usr/bin/time, python3 with PyYAML (their equivalence
# checks) and helm, which tests/setup.sh installs (the pinned one) and puts on PATH when it is not
# there; a helm other than helm 4 is only warned about. Sourced: `check_tools` calls the script's
# own `die` and `log`, reads `root` (the repository) and sets `helm_version`.
check_tools() {
  ((BASH_VERSINFO[0] >= 5)) || die "bash >= 5 is needed (for \$EPOCHREALTIME)"
  [[ -x /usr/bin/time ]] || die "GNU time is needed at /usr/bin/time (Debian/Ubuntu: apt-get install time)"
  /usr/bin/time -f '%e %U %S %M' -o /dev/null true 2>/dev/null ||
    die "/usr/bin/time is not GNU time (it does not take -f/-o)"
  command -v python3 >/dev/null || die "python3 is needed"
  python3 -c 'import yaml' 2>/dev/null ||
    die "python3 has no PyYAML (module 'yaml'); install it with your system's package manager (e.g. apt-get install python3-yaml)"
  if ! command -v helm >/dev/null; then
    log "helm is not on PATH: running tests/setup.sh"
    eval "$("$root/tests/setup.sh")"
    command -v helm >/dev/null || die "helm is still not on PATH after tests/setup.sh"
  fi
  helm_version=$(helm version --template '{{.Version}}' 2>/dev/null || echo unknown)
  [[ $helm_version == v4.* ]] || log "warning: helm is $helm_version, not helm 4"
}
