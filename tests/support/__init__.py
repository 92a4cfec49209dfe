"""support: what the Python tests share, so that each test file keeps only its scenarios.

    kcoord.py  a kcoord process under test: started on free ports with its own data
               directory, its log collected and waited on, its HTTP listener asked, its
               memory read, stopped and reaped; free_port()
    wire.py    the Kafka wire protocol by hand: encoders, a Writer and a Reader, and a
               connection that sends a request (header v1, or v2 when flexible) and reads
               its answer (header v0, or v1)

A test file under tests/<suite>/ imports it as `tests.support` after putting the repository
root on sys.path:

    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
    from tests.support import kcoord, wire
"""
