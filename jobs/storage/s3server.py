"""A real S3-compatible server for the tests and the benchmark: S3Proxy (Apache-2.0, the
``s3proxy`` bundle) over a filesystem blobstore in a temporary directory, in its own JVM on a
free port on 127.0.0.1, with AWS signature v2/v4 authentication, stopped by its caller. One
bucket (``BUCKET``) exists when it is ready. Not for production."""

from __future__ import annotations

import secrets
import shutil
import socket
import subprocess
import tempfile
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path

from jobs.storage.errors import StorageError
from jobs.storage.s3options import S3Options

START_TIMEOUT_S = 300.0
"""S3Proxy answers ~5 s after its JVM starts on an idle machine."""
BUCKET = "tidemark"


@dataclass(frozen=True)
class S3Server:
    endpoint: str
    """``http://127.0.0.1:<port>``."""
    access_key: str
    secret_key: str
    process: subprocess.Popen[bytes]
    base: Path

    def options(self) -> S3Options:
        return S3Options(endpoint=self.endpoint, path_style=True,
                         access_key=self.access_key, secret_key=self.secret_key)

    def env(self) -> dict[str, str]:
        """The settings and credentials variables a tidemark process needs to reach it."""
        return {"TIDEMARK_S3_ENDPOINT": self.endpoint, "TIDEMARK_S3_PATH_STYLE": "1",
                "AWS_ACCESS_KEY_ID": self.access_key, "AWS_SECRET_ACCESS_KEY": self.secret_key}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _answers(endpoint: str) -> bool:
    try:
        with urllib.request.urlopen(endpoint + "/", timeout=5):
            return True
    except urllib.error.HTTPError:
        return True  # 403 without credentials: the server is up
    except OSError:
        return False


def start() -> S3Server:
    from jobs.jvmdeps import bundle_jars
    from jobs.storage.minihdfs import java

    base = Path(tempfile.mkdtemp(prefix="tidemark-s3-"))
    (base / "blobs" / BUCKET).mkdir(parents=True)  # a bucket is a folder of the blobstore
    endpoint = f"http://127.0.0.1:{_free_port()}"
    access, secret = "tidemark-test", secrets.token_hex(16)
    conf = base / "s3proxy.conf"
    conf.write_text("\n".join([
        f"s3proxy.endpoint={endpoint}",
        "s3proxy.authorization=aws-v2-or-v4",
        f"s3proxy.identity={access}",
        f"s3proxy.credential={secret}",
        "jclouds.provider=filesystem-nio2",
        f"jclouds.filesystem.basedir={base / 'blobs'}",
    ]) + "\n")
    jar = bundle_jars("s3proxy")[0]
    log = (base / "s3proxy.log").open("wb")
    proc = subprocess.Popen([java(), "-Xmx256m", "-jar", str(jar), "--properties", str(conf)],
                            stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + START_TIMEOUT_S
    while not _answers(endpoint):
        if proc.poll() is not None:
            raise StorageError(f"S3Proxy exited ({proc.returncode}); log: "
                               f"{(base / 's3proxy.log').read_text()[-2000:]}")
        if time.monotonic() > deadline:
            proc.kill()
            raise StorageError(f"S3Proxy not answering after {START_TIMEOUT_S:.0f} s")
        time.sleep(0.3)
    return S3Server(endpoint=endpoint, access_key=access, secret_key=secret, process=proc,
                    base=base)


def stop(server: S3Server) -> None:
    server.process.terminate()
    try:
        server.process.wait(timeout=60)
    except subprocess.TimeoutExpired:
        server.process.kill()
        server.process.wait()
    shutil.rmtree(server.base, ignore_errors=True)
