"""`python -m lobug.config --example`: print systemd/lobug.toml.example from the models."""

import argparse

from lobug.config.example import render_example

parser = argparse.ArgumentParser(prog="python -m lobug.config")
parser.add_argument("--example", action="store_true", required=True, help="print the example")
parser.parse_args()
print(render_example(), end="")
