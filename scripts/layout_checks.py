#!/usr/bin/env python3
"""The layout checks of issue 37, over a configured and built tree (its compilers' .d files):

  - headers of det's own over 250 lines that more than 10 translation units include;
  - caf::scoped_actor in the HTTP layer and the routes (master/http/, *_routes.*, the gateway, the proxy);
  - literal HTTP statuses in routes: reply_error(res, 4xx...), out.error(4xx...).

    scripts/layout_checks.py [BUILD_DIR]      exits 1 when a check finds something
"""

import collections
import glob
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BUILD = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "build"))
OWN_DIRS = ("agent", "auth", "config", "gpu", "main", "master", "messages", "model", "node", "observability", "process",
            "provisioner", "scheduler", "searcher", "storage", "tensorboard", "worker")


def own_header(path):
    rel = os.path.relpath(os.path.realpath(path), ROOT)
    own = rel.split(os.sep)[0] in OWN_DIRS and rel.endswith(".hpp")
    return rel if own and os.path.exists(os.path.join(ROOT, rel)) else None  # a stale .d names moved ones


def header_fanout():
    users = collections.defaultdict(set)
    for depfile in glob.glob(os.path.join(BUILD, "**", "*.o.d"), recursive=True):
        with open(depfile) as f:
            words = f.read().replace("\\\n", " ").split()
        target = depfile[:-2]
        compiled_in = depfile.split(os.sep + "CMakeFiles" + os.sep)[0]  # relative paths start there
        source = words[1] if os.path.isabs(words[1]) else os.path.join(compiled_in, words[1])
        if not os.path.exists(source):
            continue  # left by a file since moved
        for word in words[1:]:
            rel = own_header(word if os.path.isabs(word) else os.path.join(compiled_in, word))
            if rel:
                users[rel].add(target)
    heavy = []
    for rel, tus in users.items():
        with open(os.path.join(ROOT, rel)) as f:
            lines = sum(1 for _ in f)
        if lines > 250 and len(tus) > 10:
            heavy.append((rel, lines, len(tus)))
    return sorted(heavy, key=lambda x: -x[2])


def http_layer_files():
    master = os.path.join(ROOT, "master")
    http = glob.glob(os.path.join(master, "http", "*.[ch]pp"))
    routes = [p for p in glob.glob(os.path.join(master, "**", "*.[ch]pp"), recursive=True)
              if re.search(r"(_routes\.|http_gateway|task_proxy)", os.path.basename(p))]
    return sorted(set(http + routes))


def grep(files, pattern):
    found = []
    for p in files:
        with open(p) as f:
            for number, line in enumerate(f, 1):
                if re.search(pattern, line) and not line.lstrip().startswith("//"):
                    found.append(f"{os.path.relpath(p, ROOT)}:{number}: {line.strip()}")
    return found


def main():
    heavy = header_fanout()
    scoped = grep(http_layer_files(), r"scoped_actor")
    literal = grep(http_layer_files(), r"(reply_error\(\w+, |\.error\(|error_response\(|refusal\()[1-5]\d\d\b")
    print(f"headers over 250 lines included by more than 10 translation units: {len(heavy)}")
    for rel, lines, tus in heavy:
        print(f"  {rel}: {lines} lines, {tus} translation units")
    print(f"scoped_actor in the HTTP layer and routes: {len(scoped)}")
    for line in scoped:
        print("  " + line)
    print(f"literal HTTP statuses in the HTTP layer and routes: {len(literal)}")
    for line in literal:
        print("  " + line)
    return 1 if heavy or scoped or literal else 0


if __name__ == "__main__":
    sys.exit(main())
