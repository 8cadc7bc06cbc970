# Sourced by bench/run_suite.sh and bench/run_sweep.sh (not run on its own): the
# one-command wrappers' shared part.
#
#   bench_run CALLER USAGE_END SCRIPT DIR_OPTION DIR OUT [options...]
#
# runs ${PYTHON:-python3} SCRIPT (next to CALLER) DIR_OPTION DIR --out OUT options...
# in place of the shell (exec; its exit code is the script's). With fewer than two
# arguments after DIR_OPTION it prints CALLER's usage (its comment lines 2 to
# USAGE_END, without the leading '# ') to stderr and exits 2.
bench_run() {
  local caller=$1 usage_end=$2 script=$3 dir_option=$4
  shift 4
  if [ $# -lt 2 ]; then
    sed -n "2,${usage_end}p" "$caller" | sed 's/^# \{0,1\}//' >&2
    exit 2
  fi
  local dir=$1 out=$2
  shift 2
  exec "${PYTHON:-python3}" "$(dirname "$caller")/$script" "$dir_option" "$dir" --out "$out" "$@"
}
