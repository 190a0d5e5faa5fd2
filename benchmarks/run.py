"""`make bench`: run every benchmark, print markdown tables, and write bench_results/*.json."""
from __future__ import annotations

import argparse
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import overhead  # noqa: E402


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="fewer calls per measurement")
    parser.add_argument("--out", default="bench_results")
    args = parser.parse_args()
    os.makedirs(args.out, exist_ok=True)
    rows = overhead.run(quick=args.quick)
    print("## Per-call overhead (compiled minus eager), backend=eager\n")
    print(overhead.to_markdown(rows))
    with open(os.path.join(args.out, "overhead.json"), "w") as f:
        json.dump(rows, f, indent=2)
    print(f"\nwrote {os.path.join(args.out, 'overhead.json')}")


if __name__ == "__main__":
    main()
