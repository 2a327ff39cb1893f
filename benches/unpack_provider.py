#!/usr/bin/env python3
"""Unpacks a provider bundle (a .opmb, as `opm provider export` writes one) into a directory
that `opm provider pack` takes: provider.yaml and each component, with a custom section
"opm-bench" added to every component so that its code is not the one built into opm, as an
installed provider's is not (benches/e2e.sh's installed variant, benches/install.sh).

    python3 benches/unpack_provider.py BUNDLE DIR [VERSION]

DIR must exist. VERSION, when given, replaces the provider's version. Prints the version.
"""
import json, os, sys, tarfile

bundle, out = sys.argv[1], sys.argv[2]
version = sys.argv[3] if len(sys.argv) > 3 else None
with tarfile.open(bundle) as tar:
    members = {m.name: m for m in tar.getmembers()}
    manifest = json.load(tar.extractfile(next(m for n, m in members.items() if n.startswith("manifest/"))))
    holders = list(manifest["transformers"].values()) + ([manifest["renderer"]] if "renderer" in manifest else [])
    for holder in holders:
        name = os.path.basename(holder["component"])
        data = tar.extractfile(members[holder["component"]]).read()
        # A custom section "opm-bench": id 0, size 10, then the name with its length.
        with open(os.path.join(out, name), "wb") as f:
            f.write(data + bytes([0, 10, 9]) + b"opm-bench")
        holder["component"] = name
        holder.pop("digest", None)
if version is not None:
    manifest["metadata"]["version"] = version
with open(os.path.join(out, "provider.yaml"), "w") as f:
    json.dump(manifest, f)
print(manifest["metadata"]["version"])
