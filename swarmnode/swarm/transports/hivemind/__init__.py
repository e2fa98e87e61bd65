"""The hivemind transport: hivemind's DHT in the daemon's event loop, p2pd its child process.

- transport.py: `HivemindTransport`, the Transport on hivemind's DHT and p2pd
- validator.py: `PolicyValidator`, the DHT-side check of every stored value
- control_writes.py: `write_in_one_send`, p2pd control messages in one send each (not a send per length byte)
- imports.py: importing hivemind lazily and quietly (`hivemind_modules`), never beside libp2p
"""
