"""wire: the Kafka wire protocol's primitives, for tests that speak it without a client library.

The messages themselves are generated from proto/*.kdef into gen_wire.py (encode_<message>,
decode_<message>), which writes and reads through the Writer and Reader here; Conn.ask sends
one request built by it and decodes the answer. The primitives stay for tests that send what
no kdef describes: garbage, truncated frames, versions kcoord does not serve.

Encoders are functions that return bytes (i16(5) + string("g") is a request body), the Writer
chains the same encoders (Writer().i16(5).string("g").bytes()), and the Reader takes the same
types off a response body, raising WireError (a ValueError) on a short or garbled answer.
Classic types: i8 i16 i32 i64 string bytes_ array; flexible (compact) ones: uvarint
compact_string compact_bytes compact_array tagged_fields.

Conn is one TCP connection. call() sends one request and reads its answer; send() and recv()
are separate for tests that keep several requests in flight. A flexible request carries
request header v2 (tagged fields after the client id) and gets response header v1 (tagged
fields after the correlation id); a non-flexible one header v1 and v0. ApiVersions always
answers with header v0: call it with flexible=False.

To extend: add the encoder as a function, its chained form to the Writer and its decoder to
the Reader, next to the types of the same family.
"""
import re
import socket
import struct

IO_TIMEOUT_S = 10


class WireError(ValueError):
    pass


class Msg(dict):
    """A decoded message: a dict whose keys are also attributes (m.error_code)."""

    def __getattr__(self, name):
        try:
            return self[name]
        except KeyError:
            raise AttributeError(name) from None

    def __setattr__(self, name, value):
        self[name] = value


# ---- encoders -------------------------------------------------------------------------------

def i8(v):
    return struct.pack(">b", v)


def i16(v):
    return struct.pack(">h", v)


def i32(v):
    return struct.pack(">i", v)


def i64(v):
    return struct.pack(">q", v)


def string(s):
    """A nullable string: i16 length (-1 for None), then UTF-8."""
    if s is None:
        return i16(-1)
    b = s.encode()
    return i16(len(b)) + b


def bytes_(b):
    """Nullable bytes: i32 length (-1 for None), then the bytes."""
    return i32(-1) if b is None else i32(len(b)) + b


def uvarint(v):
    out = bytearray()
    while v >= 0x80:
        out.append((v & 0x7F) | 0x80)
        v >>= 7
    out.append(v)
    return bytes(out)


def compact_string(s):
    """A compact nullable string: uvarint length + 1 (0 for None), then UTF-8."""
    if s is None:
        return uvarint(0)
    b = s.encode()
    return uvarint(len(b) + 1) + b


def compact_bytes(b):
    return uvarint(0) if b is None else uvarint(len(b) + 1) + b


class Writer:
    """Chained encoders; bytes() is what was written."""

    def __init__(self):
        self.parts = []

    def raw(self, b):
        self.parts.append(b)
        return self

    def i8(self, v):
        return self.raw(i8(v))

    def i16(self, v):
        return self.raw(i16(v))

    def i32(self, v):
        return self.raw(i32(v))

    def i64(self, v):
        return self.raw(i64(v))

    def string(self, s):
        return self.raw(string(s))

    def bytes_(self, b):
        return self.raw(bytes_(b))

    def uvarint(self, v):
        return self.raw(uvarint(v))

    def compact_string(self, s):
        return self.raw(compact_string(s))

    def compact_bytes(self, b):
        return self.raw(compact_bytes(b))

    # The forms gen_wire.py writes: compact (flexible) or classic by a flag.

    def boolean(self, v):
        return self.i8(1 if v else 0)

    def u16(self, v):
        return self.raw(struct.pack(">H", v))

    def f64(self, v):
        return self.raw(struct.pack(">d", v))

    def uuid(self, b):
        if len(b) != 16:
            raise ValueError("a uuid is 16 bytes")
        return self.raw(bytes(b))

    def str_(self, s, compact):
        return self.compact_string(s) if compact else self.string(s)

    def bytes_of(self, b, compact):
        return self.compact_bytes(b) if compact else self.bytes_(b)

    def array_len(self, n, compact):
        """An array's count (-1: null): uvarint n + 1 when compact, else i32."""
        return self.uvarint(n + 1) if compact else self.i32(n)

    def bytes(self):
        return b"".join(self.parts)


class Reader:
    """Reads a response body front to back; `error` is the exception a short or garbled body
    raises (a subclass may name its own)."""

    error = WireError

    def __init__(self, buf):
        self.buf = buf
        self.pos = 0

    def take(self, n):
        if n < 0 or self.pos + n > len(self.buf):
            raise self.error("short response: need %d bytes at %d of %d"
                             % (n, self.pos, len(self.buf)))
        b = self.buf[self.pos:self.pos + n]
        self.pos += n
        return b

    def i8(self):
        return struct.unpack(">b", self.take(1))[0]

    def i16(self):
        return struct.unpack(">h", self.take(2))[0]

    def i32(self):
        return struct.unpack(">i", self.take(4))[0]

    def i64(self):
        return struct.unpack(">q", self.take(8))[0]

    def boolean(self):
        return self.i8() != 0

    def string(self):
        n = self.i16()
        return None if n < 0 else self.take(n).decode(errors="replace")

    def bytes_(self):
        n = self.i32()
        return None if n < 0 else self.take(n)

    def uvarint(self):
        v, shift = 0, 0
        while True:
            b = self.take(1)[0]
            v |= (b & 0x7F) << shift
            if not b & 0x80:
                return v
            shift += 7
            if shift > 28:
                raise self.error("unsigned varint longer than 5 bytes")

    def compact_string(self):
        n = self.uvarint() - 1
        return None if n < 0 else self.take(n).decode(errors="replace")

    def compact_bytes(self):
        n = self.uvarint() - 1
        return None if n < 0 else self.take(n)

    def u16(self):
        return struct.unpack(">H", self.take(2))[0]

    def f64(self):
        return struct.unpack(">d", self.take(8))[0]

    def uuid(self):
        return self.take(16)

    def str_(self, compact):
        return self.compact_string() if compact else self.string()

    def bytes_of(self, compact):
        return self.compact_bytes() if compact else self.bytes_()

    def array_len(self, compact):
        """An array's count, -1 for null; WireError when it exceeds the bytes left."""
        n = self.uvarint() - 1 if compact else self.i32()
        if n > len(self.buf) - self.pos:
            raise self.error("array count %d exceeds the response" % n)
        return n

    def at_end(self):
        return self.pos == len(self.buf)

    def tagged_fields(self):
        for _ in range(self.uvarint()):
            self.uvarint()  # tag
            self.take(self.uvarint())

    def _items(self, n, item):
        if n < 0:
            return None
        if n > len(self.buf) - self.pos:
            raise self.error("array count %d exceeds the response" % n)
        return [item(self) for _ in range(n)]

    def array(self, item):
        """An i32-counted array of item(reader); None for a null array."""
        return self._items(self.i32(), item)

    def compact_array(self, item):
        return self._items(self.uvarint() - 1, item)


def frame(key, version, corr, client_id, body, flexible=False):
    """One request frame: size, request header v1 (v2, with no tagged fields, when flexible),
    body. For tests that pipeline requests in one write."""
    head = i16(key) + i16(version) + i32(corr) + string(client_id)
    if flexible:
        head += uvarint(0)
    return i32(len(head) + len(body)) + head + body


def response(data, flexible=False):
    """A response frame's bytes after its size: (correlation id, Reader of the body)."""
    r = Reader(data)
    corr = r.i32()
    if flexible:
        r.tagged_fields()
    return corr, r


class Conn:
    """One connection to a Kafka listener; correlation ids count up from 1."""

    def __init__(self, port, client_id, host="127.0.0.1", timeout=IO_TIMEOUT_S, nodelay=True):
        self.s = socket.create_connection((host, port), timeout=timeout)
        if nodelay:
            self.s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.client_id = client_id
        self.corr = 0

    def send(self, key, version, body, flexible=False):
        """Send one request: its correlation id."""
        self.corr += 1
        self.s.sendall(frame(key, version, self.corr, self.client_id, body, flexible))
        return self.corr

    def recv(self, flexible=False):
        """The next answer: (correlation id, Reader of its body); EOFError when the server
        closed the connection."""
        size = struct.unpack(">i", self.exact(4))[0]
        return response(self.exact(size), flexible)

    def call(self, key, version, body, flexible=False):
        """Send one request and read its answer: a Reader of the body after the header."""
        corr = self.send(key, version, body, flexible)
        got, r = self.recv(flexible)
        if got != corr:
            raise WireError("correlation id %d, expected %d" % (got, corr))
        return r

    def ask(self, api, version, m=None, **fields):
        """Send request `api` (a name of gen_wire.APIS: "JoinGroup") at version, its fields
        from m and fields, and decode the answer: a Msg. The headers follow the version's
        flexibility (ApiVersions answers with header v0 always)."""
        from tests.support import gen_wire
        key, _, _, first_flexible = gen_wire.APIS[api]
        flexible = first_flexible is not None and version >= first_flexible
        name = _snake(api)
        body = getattr(gen_wire, "encode_%s_request" % name)(version, m, **fields)
        corr = self.send(key, version, body, flexible)
        got, r = self.recv(flexible and key != 18)
        if got != corr:
            raise WireError("correlation id %d, expected %d" % (got, corr))
        return getattr(gen_wire, "decode_%s_response" % name)(version, r)

    def exact(self, n):
        buf = b""
        while len(buf) < n:
            chunk = self.s.recv(n - len(buf))
            if not chunk:
                raise EOFError("connection closed")
            buf += chunk
        return buf

    def close(self):
        self.s.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def _snake(name):
    """JoinGroup -> join_group, as gen_wire.py names its functions."""
    s = re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", name)
    return re.sub(r"([A-Z]+)([A-Z][a-z])", r"\1_\2", s).lower()


def ask(port, client_id, api, version, m=None, timeout=IO_TIMEOUT_S, **fields):
    """One request on a connection of its own (see Conn.ask): the decoded answer."""
    with Conn(port, client_id, timeout=timeout) as c:
        return c.ask(api, version, m, **fields)


def call(port, client_id, key, version, body, flexible=False, timeout=IO_TIMEOUT_S):
    """One request on a connection of its own: a Reader of the answer's body."""
    with Conn(port, client_id, timeout=timeout) as c:
        return c.call(key, version, body, flexible)
