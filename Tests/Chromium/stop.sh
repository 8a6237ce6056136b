# Sourced by the Chromium scripts: stops what a run started, Chromium's helpers included.
# Killing Chromium's main process is not enough: its crashpad handler and zygote outlive it for a
# moment and keep writing into the profile (CI once failed in `rm -rf` on "Directory not empty").
# Every such process names the run's folder on its command line, so it is found by that.
#   stop_run FOLDER PID...
stop_run() {
  local work=$1; shift
  local p
  for p in "$@"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  for _ in $(seq 1 50); do
    pgrep -f -- "$work" >/dev/null || return 0
    pkill -f -- "$work" 2>/dev/null || true
    sleep 0.1
  done
  pkill -KILL -f -- "$work" 2>/dev/null || true
}
