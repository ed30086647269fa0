"""Where the JDK's programs are: the Spark runtime, the test HDFS and the broker all start them."""

from __future__ import annotations

import os
import shutil
from pathlib import Path


def jdk_tool(name: str) -> str | None:
    """A JDK program (``java``, ``javac``): ``$JAVA_HOME/bin/<name>``, else the one on PATH."""
    home = os.environ.get("JAVA_HOME")
    if home and Path(home, "bin", name).exists():
        return str(Path(home, "bin", name))
    return shutil.which(name)
