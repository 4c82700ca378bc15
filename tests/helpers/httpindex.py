"""Serves a directory over HTTP for pip.bats's package index, and looks
nothing up: `python3 -m http.server` asks the resolver for its own address's
name at start (HTTPServer.server_bind calls socket.getfqdn), a query that
would leave the test namespace.

    httpindex.py ADDR PORT DIR

Logs one line per request on stderr ("GET /path 200"). Standard library
only.
"""
import functools
import http.server
import socketserver
import sys


class Server(http.server.ThreadingHTTPServer):
    def server_bind(self):
        socketserver.TCPServer.server_bind(self)
        host, port = self.server_address[:2]
        self.server_name = host  # no getfqdn
        self.server_port = port


class Handler(http.server.SimpleHTTPRequestHandler):
    def address_string(self):
        return self.client_address[0]

    def log_message(self, fmt, *args):
        sys.stderr.write("%s %s\n" % (self.client_address[0], fmt % args))
        sys.stderr.flush()


def main():
    addr, port, top = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    handler = functools.partial(Handler, directory=top)
    Server((addr, port), handler).serve_forever()


main()
