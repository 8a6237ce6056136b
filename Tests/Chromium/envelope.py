"""Audio that survives a codec and can be recognised after it, without numpy.
   envelope.py make OUT.wav            a 20 s pattern: 440 Hz tone switched on/off per 100 ms by a
                                       fixed pseudo-random sequence (48 kHz mono s16)
   envelope.py compare-json SRC.wav ENV.json   the same, with the recording's envelope already
                                       made (20 ms RMS at 8 kHz, by the subscriber page)
   envelope.py compare SRC.wav REC.raw best normalised correlation of 20 ms RMS envelopes of the
                                       source (looped, as Chromium's fake microphone loops it) and
                                       a recording (raw s16le mono 8 kHz); prints it"""
import array
import math
import random
import sys
import wave

RATE, SECONDS, UNIT = 48000, 20, 0.1


def make(path):
    rng = random.Random(13)
    on = [rng.random() < 0.5 for _ in range(int(SECONDS / UNIT))]
    samples = array.array("h", (int(12000 * math.sin(2 * math.pi * 440 * i / RATE)) if on[int(i / RATE / UNIT)] else 0
                                for i in range(RATE * SECONDS)))
    with wave.open(path, "wb") as w:
        w.setnchannels(1); w.setsampwidth(2); w.setframerate(RATE); w.writeframes(samples.tobytes())


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
        make(sys.argv[2])
    elif sys.argv[1] == "compare-json":
        import json
        env = json.load(open(sys.argv[3])).get("audioEnvelope") or []
        # Only the part with sound in it: before the first frame and after the last the page hears silence.
        first = next((i for i, x in enumerate(env) if x > 100), len(env))
        last = max((i for i, x in enumerate(env) if x > 100), default=0)
        compare(sys.argv[2], None, env[first:last + 1])
    else:
        compare(sys.argv[2], sys.argv[3])
