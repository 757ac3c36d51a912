"""A scripted broker that crashes on a request with an unknown API key, under a supervisor a shell command asks to
bring it back (what ``--restart-command`` runs), for the tests of runs that go on past a crash."""

from __future__ import annotations

import socket
import sys
import threading

from fake_kafka import DIE, FakeKafka


class Supervised:
    """The scripted broker, and what its supervisor does on a restart command: a connection to ``control``
    brings a new one up on the same port (``--restart-command`` connects to it)."""

    def __init__(self):
        self.fake = FakeKafka(on_unknown_key=DIE, revivable=True)
        self.restarts = 0
        self._control = socket.create_server(("127.0.0.1", 0))
        threading.Thread(target=self._supervise, daemon=True).start()

    @property
    def restart_command(self) -> str:
        port = self._control.getsockname()[1]
        return f"{sys.executable} -c \"import socket; socket.create_connection(('127.0.0.1', {port})).recv(1)\""

    def _supervise(self) -> None:
        while True:
            try:
                asked, _ = self._control.accept()
            except OSError:
                return
            with asked:
                self.restarts += 1
                self.fake.stop()
                self.fake = self.fake.revived()
                asked.sendall(b"k")  # the command returns once the broker listens again

    def stop(self) -> None:
        self._control.close()
        self.fake.stop()
