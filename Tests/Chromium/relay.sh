# Sourced by run-publisher (MODE=relay): a coturn of the run's own (deploy/coturn/coturnctl, a
# static user whose password is made here, files 0600) and iptables rules that drop UDP to and
# from Janus's RTP ports (JANUS_RTP_PORTS) unless it is coturn's relay ports, each rule counting.
#   start_relay FOLDER; relay_counts (JSON); stop_relay FOLDER
turn_port=${TURN_PORT:-3490}
turn_relay=${TURN_RELAY_PORTS:-14600-14699}
turn_user=chromium-relay
turn_pass=$(openssl rand -hex 12)
relay_rules=()

start_relay() {
  local work=$1 janus=${JANUS_RTP_PORTS/-/:} relay=${turn_relay/-/:}
  ( umask 077; printf '%s\n' "$turn_pass" > "$work/turn.password"; printf '%s\n%s\n' "$turn_user" "$turn_pass" > "$work/turn.cred" )
  SFUBOT_RUN_DIR=$work TURN_PORT=$turn_port TURN_RELAY_PORTS=$turn_relay TURN_AUTH=user TURN_USER=$turn_user \
    TURN_PASSWORD_FILE="$work/turn.password" "$root/deploy/coturn/coturnctl" start
  # In order: coturn's own port both ways (a peer's ephemeral port may lie anywhere), relayed
  # packets to and from Janus, then everything else to or from Janus's RTP ports dropped.
  relay_rules=(
    "turn_out|-p udp --sport $turn_port -j ACCEPT"
    "turn_in|-p udp --dport $turn_port -j ACCEPT"
    "relayed|-p udp --dport $janus --sport $relay -j ACCEPT"
    "from_relay|-p udp --sport $janus --dport $relay -j ACCEPT"
    "direct_in|-p udp --dport $janus -j DROP"
    "direct_out|-p udp --sport $janus -j DROP")
  local r
  for r in "${relay_rules[@]}"; do
    # shellcheck disable=SC2086
    /usr/sbin/iptables -w -A INPUT ${r#*|} -m comment --comment "sfubot-chromium-${r%%|*}"
  done
}

# Packets each rule matched, as JSON: {"relayed": N, "direct_in": N, ...}.
relay_counts() {
  /usr/sbin/iptables -w -L INPUT -v -n -x | /usr/bin/python3 -c '
import json, re, sys
print(json.dumps({m.group(2): int(m.group(1)) for m in (re.search(r"^\s*(\d+).*/\* sfubot-chromium-(\w+) \*/", l) for l in sys.stdin) if m}))'
}

stop_relay() {
  local r
  for r in "${relay_rules[@]}"; do
    # shellcheck disable=SC2086
    /usr/sbin/iptables -w -D INPUT ${r#*|} -m comment --comment "sfubot-chromium-${r%%|*}" 2>/dev/null || true
  done
  SFUBOT_RUN_DIR=$1 TURN_PORT=$turn_port "$root/deploy/coturn/coturnctl" stop || true
}
