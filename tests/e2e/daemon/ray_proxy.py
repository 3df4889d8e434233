"""A TCP forwarder in front of a Ray head, for the daemon tests that need a head which goes
away and comes back on the same address, or answers slowly.

    ray_proxy.py LISTEN_PORT TARGET_PORT [--latency-ms N]

Listens on 127.0.0.1:LISTEN_PORT (0 picks one) and forwards every connection to
127.0.0.1:TARGET_PORT. Prints the port it listens on as its first line of stdout. With
--latency-ms, every chunk a client sends waits that long before it is forwarded, so each
request takes at least that long. Killing the process makes the head unreachable (connection
refused); starting it again with the same LISTEN_PORT brings it back.
"""

import argparse
import socket
import sys
import threading
import time


def pipe(src, dst, delay):
    try:
        while True:
            data = src.recv(65536)
            if not data:
                break
            if delay:
                time.sleep(delay)
            dst.sendall(data)
    except OSError:
        pass
    finally:
        for s in (src, dst):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass


def serve(client, target_port, delay):
    try:
        upstream = socket.create_connection(("127.0.0.1", target_port), timeout=10)
        upstream.settimeout(None)
    except OSError:
        client.close()
        return
    threading.Thread(target=pipe, args=(client, upstream, delay), daemon=True).start()
    threading.Thread(target=pipe, args=(upstream, client, 0), daemon=True).start()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("listen_port", type=int)
    parser.add_argument("target_port", type=int)
    parser.add_argument("--latency-ms", type=int, default=0)
    args = parser.parse_args()
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(("127.0.0.1", args.listen_port))
    listener.listen(64)
    print(listener.getsockname()[1], flush=True)
    delay = args.latency_ms / 1000.0
    while True:
        client, _ = listener.accept()
        serve(client, args.target_port, delay)


if __name__ == "__main__":
    try:
        main()
    except KeyboardInterrupt:
        sys.exit(0)
