"""A TCP proxy that takes what its client sends slower than it comes: a destination with too
little bandwidth, for the relay's slow-destination test. Everything a client sends is passed on
to the upstream port at RATE bytes a second at most; what the upstream answers goes back at
once. The receive buffer is small, so the client's socket fills soon rather than after
megabytes of kernel buffering. Usage: slow_proxy.py PORT UPSTREAM_PORT RATE.
"""
import socket
import sys
import threading
import time

PORT, UPSTREAM, RATE = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
CHUNK = 1024


def slow(src, dst):
    try:
        while True:
            data = src.recv(CHUNK)
            if not data:
                break
            dst.sendall(data)
            time.sleep(len(data) / RATE)
    except OSError:
        pass
    finally:
        for s in (src, dst):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass


def fast(src, dst):
    try:
        while True:
            data = src.recv(65536)
            if not data:
                break
            dst.sendall(data)
    except OSError:
        pass


def main():
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 8192)
    listener.bind(("127.0.0.1", PORT))
    listener.listen(8)
    while True:
        client, _ = listener.accept()
        upstream = socket.create_connection(("127.0.0.1", UPSTREAM))
        threading.Thread(target=slow, args=(client, upstream), daemon=True).start()
        threading.Thread(target=fast, args=(upstream, client), daemon=True).start()


if __name__ == "__main__":
    main()
