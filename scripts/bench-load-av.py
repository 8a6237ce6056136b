"""scripts/bench-load's A/V part: figures of the av-* runs, direct paths beside webrtcbin's.

Per-packet figures are process CPU over RTP packets in the steady window. The shared H.264
encoder (one per process, x264 at the preset) is inside the publishers' CPU. "µs per video
packet" takes the audio packets (50/s per publisher, 20 ms Opus) out at the audio-only run's
µs per packet when that run is in the same output folder, else it is the A/V mix's figure.

`send vs limit: R×`: the direct run's sfubot CPU per sent packet (its CPU in the steady window
over the packets its publishers sent in it) over the send limit's (`sfubot-bench send-limit`,
$SFUBOT_BENCH: seal, SRTP protect and sendmmsg alone, docs/performance.md), run after the runs
for the same publishers at the same packet rate.
"""
import json, os, re, subprocess, sys

out, P, SP, S, J, uptime = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5]), sys.argv[6]


def load(d):
    return json.load(open(f"{out}/{d}/summary.json"))


def janus(d):
    return float(open(f"{out}/{d}.janus-cores").read())


def send_vs_limit(p, window, joined):
    sent, received = p.get("packetsSent") or 0, p.get("packetsReceived") or 0
    bench = os.environ.get("SFUBOT_BENCH")
    if sent <= 0 or window <= 0 or joined <= 0 or not bench:
        print(f"send vs limit: not measured ({'no SFUBOT_BENCH' if not bench else 'no packets sent in the steady window'})")
        return
    # The process's CPU in the window over the packets sent (µs per packet counts received ones too: RTCP).
    us = p["cpuMicrosecondsPerPacket"] * (sent + received) / sent
    rate = sent / window
    limit = subprocess.run([bench, "send-limit", "--publishers", str(joined), "--seconds", "10", "--rate", f"{rate:.0f}"],
                           capture_output=True, text=True)
    lines = limit.stdout.splitlines()
    for l in lines:
        if not l.startswith("send limit:"):
            print("  " + l)
    line = next((l for l in lines if l.startswith("send limit:")), "")
    print(line or f"send limit: none (sfubot-bench send-limit exit {limit.returncode}: {limit.stderr.strip()[-200:]})")
    m = re.match(r"send limit: ([0-9.]+) µs", line)
    if m and float(m.group(1)) > 0 and limit.returncode == 0:
        print(f"send vs limit: {us / float(m.group(1)):.1f}× (sfubot {us:.1f} µs per sent packet at {rate:.0f} packets/s, "
              f"limit {m.group(1)}; target ≤ 2.0)")
    else:
        print(f"send vs limit: not measured (sfubot-bench send-limit exit {limit.returncode})")
    # The same limit with every publisher's frames at its own instant: one wake-up and a small
    # sendmmsg per frame instead of one per tick for all (what the batching is worth).
    spread = subprocess.run([bench, "send-limit", "--publishers", str(joined), "--seconds", "10", "--rate", f"{rate:.0f}", "--phases", "spread"],
                            capture_output=True, text=True)
    m = re.search(r"^send limit: ([0-9.]+) µs per sent packet \(([0-9.]+) in the kernel", spread.stdout, re.M)
    if m and float(m.group(1)) > 0 and spread.returncode == 0:
        print(f"  the limit with the publishers' frames spread over 20 ms instead of in step: {m.group(1)} µs per sent packet "
              f"({m.group(2)} in the kernel) → sfubot {us / float(m.group(1)):.1f}× that")


audio_us = None
if os.path.exists(f"{out}/publishers/summary.json"):
    audio_us = {"direct": load("publishers")["process"][0]["cpuMicrosecondsPerPacket"]}
    if os.path.exists(f"{out}/publishers-webrtcbin/summary.json"):
        audio_us["webrtcbin"] = load("publishers-webrtcbin")["process"][0]["cpuMicrosecondsPerPacket"]

print(f"A/V at the phone preset (640x360, 15 fps, 600 kbit/s + Opus 32 kbit/s); {uptime.strip()}")
for name in ("av-publishers", "av-publishers-webrtcbin", "av-base", "av-subscribers", "av-subscribers-webrtcbin", "av-burst"):
    s = load(name)
    if not s["held"]:
        print(f"  note: run '{name}' did not hold: {'; '.join(s['problems'])}")

for run, path in (("av-publishers", "direct"), ("av-publishers-webrtcbin", "webrtcbin")):
    r = load(run)
    p, window, joined = r["process"][0], r["steady"]["seconds"], r["bots"]["joined"]
    sent = p.get("packetsSent") or 0
    audio_packets = 50 * joined * window
    video_packets = max(1, sent - audio_packets)
    us_mix = p["cpuMicrosecondsPerPacket"]
    if audio_us and path in audio_us:
        us_video = (us_mix * sent - audio_us[path] * audio_packets) / video_packets
        video = f"{us_video:.1f} µs per video packet sent (target ≤ 30; audio's {audio_us[path]:.1f} taken out)"
    else:
        video = f"{us_mix:.1f} µs per packet sent, audio and video mixed (no audio-only run to take audio out)"
    k = r["publishers"].get("keyframes") or {}
    print(f"{run}: {joined}/{P} joined; sfubot CPU {p['cpuCores']:.3f} cores → {joined / p['cpuCores']:.0f} A/V publishers per core "
          f"(target ≥ 500, send path {path}); Janus {janus(run):.3f} cores")
    print(f"  {video}; {us_mix:.1f} µs per packet for the mix ({p.get('kernelMicrosecondsPerPacket') or float('nan'):.1f} in the kernel); "
          f"{sent} packets in {window:.0f} s, ≈{video_packets / max(1, joined) / window:.0f} video packets/s per publisher")
    print(f"  RSS {p['rssPerBotMB']:.2f} MB per bot; {p['threadsPerBot']:.1f} threads per bot"
          + (f"; keyframe requests {k['requests']}, answered {k['answered']}, IDRs {k['sent']}, slowest answer {k['slowestAnswerMs']:.0f} ms" if k else ""))
    if path == "direct":
        send_vs_limit(p, window, joined)

b = load("av-base")["process"][0]
for run, path in (("av-subscribers", "direct"), ("av-subscribers-webrtcbin", "webrtcbin")):
    r = load(run)
    s, window = r["process"][0], r["steady"]["seconds"]
    received = s.get("packetsReceived") or 0
    extra = s["cpuCores"] - b["cpuCores"]
    subs = r["subscribers"]
    print(f"{run}: {S} × {SP} A/V feeds, {subs['receivingEveryFeed']}/{S} received every feed, {subs['framesOpened']} frames decrypted, "
          f"{subs['decryptFailuresTotal']} failed; receive path {path}")
    print(f"  {received} packets received in {window:.0f} s; CPU {s['cpuCores']:.3f} cores with subscribers, {b['cpuCores']:.3f} without "
          f"→ {1e6 * extra * window / max(1, received):.1f} µs per packet received (target ≤ 30), "
          f"{S / extra if extra > 0 else float('nan'):.0f} A/V subscribers (of {SP} feeds) per core; RSS {s['rssPerBotMB']:.2f} MB per bot; "
          f"Janus {janus(run):.3f} cores")

r = load("av-burst")
j = r["joinPhases"].get("subscriber", {})
fd = j.get("first_decrypted", {}).get("at")
print(f"av-burst: {r['bots']['joined']}/{J + 2} joined at 100/s (2 A/V publishers); join → first decrypted frame "
      + (f"p50 {fd['p50']:.3f} p95 {fd['p95']:.3f} p99 {fd['p99']:.3f} s (target p95 ≤ 0.5)" if fd else "–") + f"; Janus {janus('av-burst'):.3f} cores")
print("  each phase alone, ms    p50    p95    p99   (reached at p95)")
for name in ["websocket", "session", "attached", "joined", "negotiated", "ice_connected", "dtls_connected", "first_rtp", "first_decrypted"]:
    t = j.get(name)
    if not t or not t.get("took"):
        continue
    took, at = t["took"], t["at"]
    print(f"  {name:<20} {took['p50'] * 1000:6.0f} {took['p95'] * 1000:6.0f} {took['p99'] * 1000:6.0f}   ({at['p95'] * 1000:.0f})")
