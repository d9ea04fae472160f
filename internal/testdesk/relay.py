# relay.py: forwards each connection on a unix socket to another unix
# socket. testdesk runs it inside the desk so that a host process can reach
# ibus-daemon: the daemon's D-Bus server takes the peer's credentials from
# the socket (EXTERNAL), and a peer in the parent PID namespace, seen from
# the desk's, has none it accepts; the relay's own are the desk's.
# Arguments: the socket to listen on, the socket to connect to.
# Prints "listening" once it accepts connections; ends when its stdin ends.
import os
import socket
import sys
import threading

listen, target = sys.argv[1], sys.argv[2]


def pump(src, dst):
    try:
        while True:
            b = src.recv(65536)
            if not b:
                break
            dst.sendall(b)
    except OSError:
        pass
    finally:
        for s in (src, dst):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass


def serve(client):
    upstream = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        upstream.connect(target)
    except OSError:
        client.close()
        return
    threading.Thread(target=pump, args=(client, upstream), daemon=True).start()
    threading.Thread(target=pump, args=(upstream, client), daemon=True).start()


def watch_stdin():
    sys.stdin.read()
    os._exit(0)


threading.Thread(target=watch_stdin, daemon=True).start()
try:
    os.unlink(listen)
except FileNotFoundError:
    pass
server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
server.bind(listen)
server.listen(16)
print("listening", flush=True)
while True:
    conn, _ = server.accept()
    serve(conn)
