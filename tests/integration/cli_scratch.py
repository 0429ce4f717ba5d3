"""A scratch directory for tests that run `llmcapd` subcommands as a user does (predict, run,
report, sim calibrate): the binary comes from argv[1], files are written to and read from a
temporary directory that is also the commands' working directory."""
import json
import os
import subprocess
import sys
import tempfile

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def binary_from_argv():
    """Pops the llmcapd path (argv[1]) so that unittest sees only its own arguments."""
    return os.path.abspath(sys.argv.pop(1)) if len(sys.argv) > 1 else "llmcapd"


class CliScratch:
    def __init__(self, binary, prefix):
        self.binary = binary
        self.dir = tempfile.TemporaryDirectory(prefix=prefix)
        self.name = self.dir.name  # like a TemporaryDirectory's

    def path(self, name):
        return os.path.join(self.dir.name, name)

    def run(self, *args, timeout=300):
        return subprocess.run([self.binary, *args], capture_output=True, text=True,
                              timeout=timeout, cwd=self.dir.name)

    def write(self, name, doc):
        with open(self.path(name), "w") as f:
            json.dump(doc, f)
        return self.path(name)

    def load(self, name):
        with open(self.path(name)) as f:
            return json.load(f)
