"""The hivemind transport: hivemind's DHT in the daemon's event loop, p2pd its child process.

- transport.py: `HivemindTransport`, the Transport on hivemind's DHT and p2pd
- validator.py: `PolicyValidator`, the DHT-side check of every stored value
- imports.py: importing hivemind lazily and quietly (`hivemind_modules`), never beside libp2p
"""
