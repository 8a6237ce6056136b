#!/usr/bin/env python3
"""Part 5 of scripts/bench-load: the relayed runs beside the direct ones (µs of sfubot CPU per
packet sent and received, coturn's and Janus's cores) and the round-trip time the relay adds
(RTCP, publishers sending through webrtcbin: the direct send path sends no sender reports).
   bench-load-relay.py OUT PUBLISHERS SUB_PUBLISHERS SUBSCRIBERS"""
import json, os, sys

out, P, SP, S = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
def load(d): return json.load(open(f"{out}/{d}/summary.json"))
def cores(d, who):
    path = f"{out}/{d}.{who}-cores"
    return float(open(path).read()) if os.path.exists(path) else float("nan")
def ice(d):
    i = load(d).get("ice") or {}
    return f"{i.get('relayed', 0)}/{i.get('bots', 0)} bots relayed ({', '.join(f'{k} {v}' for k, v in sorted((i.get('pairs') or {}).items()))})"

print("through a TURN relay (coturn on this machine, every bot --ice-transport-policy relay):")
for name in ("publishers-relay", "publishers-relay-webrtcbin", "base-relay", "subscribers-relay"):
    s = load(name)
    if not s["held"]: print(f"  note: run '{name}' did not hold: {'; '.join(s['problems'])}")
for name, direct in (("publishers-relay", "publishers"), ("publishers-relay-webrtcbin", "publishers-webrtcbin")):
    r, d = load(name), load(direct)
    p, q = r["process"][0], d["process"][0]
    i = r.get("ice") or {}
    through = f"; {i.get('directPacketsThroughAgent', 0)} of {i.get('directPacketsSent', 0)} direct packets TURN-framed by libnice" if i.get("directPacketsSent") else ""
    print(f"  {name}: {r['bots']['joined']}/{P} joined, {ice(name)}; {p['cpuMicrosecondsPerPacket']:.1f} µs of CPU per sent packet "
          f"({p.get('kernelMicrosecondsPerPacket') or float('nan'):.1f} kernel) vs {q['cpuMicrosecondsPerPacket']:.1f} without the relay ({direct}); "
          f"{r['bots']['joined'] / p['cpuCores']:.0f} publishers per core; coturn {cores(name, 'coturn'):.3f} cores, Janus {cores(name, 'janus'):.3f}{through}")
b, s, sub = load("base-relay")["process"][0], load("subscribers-relay")["process"][0], load("subscribers-relay")
received = s["packetsReceived"] or 0
extra = (s["cpuCores"] - b["cpuCores"]) * sub["steady"]["seconds"]
bd, sd, subd = load("base")["process"][0], load("subscribers")["process"][0], load("subscribers")
direct = 1e6 * (sd["cpuCores"] - bd["cpuCores"]) * subd["steady"]["seconds"] / max(1, sd["packetsReceived"] or 0)
print(f"  subscribers-relay: {S} × {SP} feeds, {ice('subscribers-relay')}, {sub['subscribers']['receivingEveryFeed']}/{S} received every feed, "
      f"{sub['subscribers']['framesOpened']} frames decrypted, {sub['subscribers']['decryptFailuresTotal']} failed")
print(f"    {received} packets received; {1e6 * extra / max(1, received):.1f} µs of CPU per received and decrypted packet vs {direct:.1f} without the relay; "
      f"packets {s.get('receivedPastQueue')} past webrtcbin's receive queue, {s.get('receivedThroughQueue')} through it; "
      f"coturn {cores('subscribers-relay', 'coturn'):.3f} cores, Janus {cores('subscribers-relay', 'janus'):.3f}")
rd = load("publishers-webrtcbin")["publishers"].get("rttMs")
rr = load("publishers-relay-webrtcbin")["publishers"].get("rttMs")
if rd and rr:
    print(f"  RTT to Janus (RTCP, publishers through webrtcbin): direct p50 {rd['p50']:.2f} p95 {rd['p95']:.2f} ms; "
          f"relayed p50 {rr['p50']:.2f} p95 {rr['p95']:.2f} ms → the relay adds {rr['p50'] - rd['p50']:+.2f} ms at p50, {rr['p95'] - rd['p95']:+.2f} ms at p95")
else:
    print(f"  RTT: not measured (direct {bool(rd)}, relayed {bool(rr)})")
