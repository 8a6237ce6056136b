"""Speech that can be recognised after a codec, without numpy.
   envelope.py make OUT.wav [TEXT]     about 20 s of English speech from espeak-ng (Debian), made
                                       offline, resampled to 48 kHz mono s16 by GStreamer
   envelope.py compare-json SRC.wav ENV.json   the same, with the recording's envelope already
                                       made (20 ms RMS at 8 kHz, by the subscriber page)
   envelope.py compare SRC.wav REC.raw best normalised correlation of 20 ms RMS envelopes of the
                                       source (looped, as Chromium's fake microphone loops it) and
                                       a recording (raw s16le mono 8 kHz); prints it"""
import array
import math
import os
import subprocess
import sys
import wave

# Pauses between words and sentences give the envelope its shape; no two seconds alike.
TEXT = ("This is the end to end encrypted call bot speaking. Seven green boxes, forty two keys. "
        "The quick brown fox jumps over the lazy dog, twice. Can you hear me now? "
        "One, two, three. Every frame is sealed before it leaves, and opened when it comes back. "
        "Numbers: eight hundred and nine, sixty, five.")


def make(path, text=TEXT):
    raw = path + ".espeak.wav"
    # Every decode under a time limit: a stuck one must fail the run, not hang it.
    subprocess.run(["espeak-ng", "-v", "en", "-s", "150", "-w", raw, text], check=True, timeout=120)
    subprocess.run(["gst-launch-1.0", "-q", "filesrc", f"location={raw}", "!", "wavparse", "!", "audioconvert", "!",
                    "audioresample", "!", "audio/x-raw,format=S16LE,rate=48000,channels=1", "!", "wavenc", "!",
                    "filesink", f"location={path}"], check=True, timeout=120)
    os.remove(raw)


def envelope(samples, rate):
    n = int(rate * 0.02)
    return [math.sqrt(sum(s * s for s in samples[i:i + n]) / n) for i in range(0, len(samples) - n + 1, n)]


def compare(src, rec, er=None):
    with wave.open(src) as w:
        s = array.array("h", w.readframes(w.getnframes()))
    es = envelope(s[::6], 8000)
    if er is None:
        er = envelope(array.array("h", open(rec, "rb").read()), 8000)
    if len(er) < 50:
        print("0.0"); return

    def norm(v):
        m = sum(v) / len(v); d = [x - m for x in v]; n = math.sqrt(sum(x * x for x in d)) or 1
        return [x / n for x in d]
    er = norm(er)
    best = 0.0
    for lag in range(len(es)):
        window = norm([es[(lag + i) % len(es)] for i in range(len(er))])
        best = max(best, sum(a * b for a, b in zip(window, er)))
    print(f"{best:.3f}")


if __name__ == "__main__":
    if sys.argv[1] == "make":
        make(sys.argv[2], *sys.argv[3:4])
    elif sys.argv[1] == "compare-json":
        import json
        env = json.load(open(sys.argv[3])).get("audioEnvelope") or []
        # Only the part with sound in it: before the first frame and after the last the page hears silence.
        first = next((i for i, x in enumerate(env) if x > 100), len(env))
        last = max((i for i, x in enumerate(env) if x > 100), default=0)
        compare(sys.argv[2], None, env[first:last + 1])
    else:
        compare(sys.argv[2], sys.argv[3])
