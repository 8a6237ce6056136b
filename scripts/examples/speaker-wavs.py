#!/usr/bin/env python3
"""A consumer of sfubot's speaker streams (docs/relay.md, "Each speaker's audio"): listens on
127.0.0.1 and writes one WAV per speaker connection as its PCM arrives (with --ws-audio opus,
the packets, each after its length as 2 bytes big-endian, in <participant>.opus-packets).
With --connect INDEX_URL it connects instead (for `sfubot relay --ws-listen`): to the index,
then to each speaker it lists.

    python3 -m venv .run/ws && .run/ws/bin/pip install websockets
    .run/ws/bin/python scripts/examples/speaker-wavs.py out/ [--port 8765] [--arrivals FILE]
    sfubot relay --to 'ws://127.0.0.1:8765/speakers/{participant}' ...

    sfubot relay --ws-listen --to 'ws://127.0.0.1:8765/speakers/{participant}' ...
    .run/ws/bin/python scripts/examples/speaker-wavs.py out/ --connect ws://127.0.0.1:8765/speakers

--arrivals FILE: one JSON line per message received (the wall-clock time it arrived, and for PCM
its byte offset in the speaker's stream), for measuring the delay from the publisher.
"""
import argparse, asyncio, json, pathlib, struct, time, wave

import websockets

args = argparse.ArgumentParser()
args.add_argument("out", nargs="?", default=".")
args.add_argument("--port", type=int, default=8765)
args.add_argument("--arrivals")
args.add_argument("--connect", help="the index URL of a relay that listens (--ws-listen)")
args = args.parse_args()
OUT = pathlib.Path(args.out)
arrivals = open(args.arrivals, "a", buffering=1) if args.arrivals else None


def note(**fields):
    if arrivals:
        arrivals.write(json.dumps({"t": time.time(), **fields}) + "\n")


async def speaker(ws):
    start = json.loads(await ws.recv())  # always the first message
    assert start["type"] == "start" and start["format"] in ("s16le", "opus"), start
    who = start["participant"]
    note(participant=who, text=start)
    name = "".join(c if c.isalnum() or c in "-_" else "_" for c in who)
    opus = start["format"] == "opus"
    path = OUT / (f"{name}.opus-packets" if opus else f"{name}.wav")
    offset = 0
    with (open(path, "ab") if opus else wave.open(str(path), "wb")) as w:
        if not opus:
            w.setnchannels(start["channels"])
            w.setsampwidth(2)
            w.setframerate(start["sample_rate"])
        print(f"{start['display']!r} ({who}) from media time {start['media_time']} s -> {path}", flush=True)
        async for message in ws:
            if isinstance(message, bytes):
                note(participant=who, offset=offset, bytes=len(message))
                offset += len(message)
                w.write(struct.pack(">H", len(message)) + message) if opus else w.writeframes(message)
                continue
            event = json.loads(message)
            note(participant=who, text=event)
            if event["type"] == "left":
                print(f"{who} left", flush=True)
                break


async def connect(url):
    """Tries for 30 s: the relay may still be starting."""
    for _ in range(150):
        try:
            return await websockets.connect(url, max_size=1 << 20)
        except OSError:
            await asyncio.sleep(0.2)
    return await websockets.connect(url, max_size=1 << 20)


async def follow(index_url):
    origin = index_url.split("/", 3)
    origin = "/".join(origin[:3])  # ws://host:port
    streams = []
    index = await connect(index_url)
    print(f"connected to {index_url}", flush=True)
    async for message in index:
        event = json.loads(message)
        note(participant=event.get("participant", ""), index=event)
        if event["type"] == "speaker":
            streams.append(asyncio.create_task(speaker(await connect(origin + event["path"]))))
    await asyncio.gather(*streams, return_exceptions=True)


async def main():
    OUT.mkdir(parents=True, exist_ok=True)
    if args.connect:
        return await follow(args.connect)
    async with websockets.serve(speaker, "127.0.0.1", args.port, max_size=1 << 20):
        print(f"listening on 127.0.0.1:{args.port}", flush=True)
        await asyncio.Future()


asyncio.run(main())
