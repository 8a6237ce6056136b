#!/usr/bin/env python3
"""A consumer of sfubot's speaker streams (docs/relay.md, "Each speaker's audio"): listens on
127.0.0.1:8765 and writes one WAV per speaker connection as its PCM arrives.

    python3 -m venv .run/ws && .run/ws/bin/pip install websockets
    .run/ws/bin/python scripts/examples/speaker-wavs.py out/
    sfubot relay --to 'ws://127.0.0.1:8765/speakers/{participant}' ...
"""
import asyncio, json, pathlib, sys, wave

import websockets

OUT = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else ".")


async def speaker(ws):
    start = json.loads(await ws.recv())  # always the first message
    assert start["type"] == "start" and start["format"] == "s16le", start
    name = "".join(c if c.isalnum() or c in "-_" else "_" for c in start["participant"])
    path = OUT / f"{name}.wav"
    with wave.open(str(path), "wb") as w:
        w.setnchannels(start["channels"])
        w.setsampwidth(2)
        w.setframerate(start["sample_rate"])
        print(f"{start['display']!r} ({start['participant']}) from media time {start['media_time']} s -> {path}")
        async for message in ws:
            if isinstance(message, bytes):
                w.writeframes(message)
            elif json.loads(message)["type"] == "left":
                print(f"{start['participant']} left")
                break


async def main():
    OUT.mkdir(parents=True, exist_ok=True)
    async with websockets.serve(speaker, "127.0.0.1", 8765, max_size=1 << 20):
        await asyncio.Future()


asyncio.run(main())
